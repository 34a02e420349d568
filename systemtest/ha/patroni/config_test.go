package patroni

import (
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
)

// writeConfig writes a sluice config on url whose "work" type runs
// proctest.LogScript around a short sleep, logging to logPath. Jobs are
// told apart by business key, not id: a primary lost with commits not
// replicated may have handed out ids that the new primary hands out again.
func writeConfig(t *testing.T, url, logPath string) string {
	t.Helper()
	return proctest.WorkConfig(t, url, workConcurrency, proctest.LogScript(logPath, "SLUICE_JOB_KEY", jobSleep), "    lease: "+jobLease, "")
}
