package patroni

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/proctest"
)

// writeConfig writes a sluice config on url whose "work" type runs a
// command that logs "start KEY ATTEMPT PID" and "end KEY ATTEMPT PID"
// around a short sleep. Jobs are told apart by business key, not id: a
// primary lost with commits not replicated may have handed out ids that
// the new primary hands out again. $PPID is the sluice process (the argv runs
// without a shell in between), so a line says which process ran it. Each
// echo is one short O_APPEND write, so lines land whole.
func writeConfig(t *testing.T, dir, name, url, logPath string) string {
	t.Helper()
	cfg := fmt.Sprintf(`db: %q
queues:
  default: { concurrency: %d }
types:
  work:
    command: ["sh", "-c", %q]
    timeout: 60s
    lease: %s
    backoff: { base: 100ms, max: 1s }
`, url, workConcurrency, proctest.LogScript(logPath, "SLUICE_JOB_KEY", jobSleep), jobLease)
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}
