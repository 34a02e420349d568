package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A command job's output is kept per attempt, stdout and stderr together,
// and `jobs show --logs` prints it under each attempt's header, its
// terminal escapes shown escaped.
func TestJobsShowLogs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		_, tg := testdb.OpenURL(t, name)
		// It fails its first attempt and succeeds on its second.
		script := filepath.Join(t.TempDir(), "flaky.sh")
		require.NoError(t, os.WriteFile(script, []byte(`echo "run $SLUICE_JOB_ATTEMPT"
printf 'oops \033[31mred\n' >&2
test "$SLUICE_JOB_ATTEMPT" -ge 2
`), 0o644))
		cfg := proctest.Config(t, tg.URL, fmt.Sprintf(`types:
  flaky:
    command: ["sh", %q]
    max_attempts: 2
    backoff: { base: 1ms, max: 1ms }
`, script))
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		r := run(t, env, "", "--config", cfg, "enqueue", "flaky")
		require.Equal(t, 0, r.Code, r.Stderr)
		var res struct {
			ID int64 `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))

		r = run(t, env, "", "--config", cfg, "run", "--max-jobs", "1")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.JSONEq(t, `{"ok":true,"done":0,"retried":1,"failed":0,"requeued":0}`, r.Stdout)
		// A pass does not wait for a retry; passes run until one runs it
		// (its backoff is 1ms), a bounded number of them.
		for pass := 0; ; pass++ {
			require.Less(t, pass, 100, "no pass ran the retry")
			r = run(t, env, "", "--config", cfg, "run", "--max-jobs", "1")
			require.Equal(t, 0, r.Code, r.Stderr)
			if strings.Contains(r.Stdout, `"done":1`) {
				break
			}
		}

		r = run(t, env, "", "--config", cfg, "jobs", "show", fmt.Sprint(res.ID), "--logs")
		require.Equal(t, 0, r.Code, r.Stderr)
		t.Logf("jobs show --logs:\n%s", r.Stdout)
		_, logs, ok := strings.Cut(r.Stdout, "\n}\n")
		require.True(t, ok, "the job's JSON comes first")
		for attempt := 1; attempt <= 2; attempt++ {
			section := fmt.Sprintf("--- attempt %d: %d bytes, written ", attempt, len("run 1\noops \x1b[31mred\n"))
			require.Contains(t, logs, section)
			require.Contains(t, logs, fmt.Sprintf("run %d\n", attempt))
		}
		require.Equal(t, 2, strings.Count(logs, `oops \x1b[31mred`+"\n"), "both attempts' stderr, escaped")
		require.NotContains(t, logs, "\x1b")

		r = run(t, env, "", "--config", cfg, "jobs", "show", fmt.Sprint(res.ID), "--logs", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		var out struct {
			Job  sluicetype.JobRow       `json:"job"`
			Logs []sluicetype.AttemptLog `json:"logs"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out))
		require.Equal(t, sluicetype.StatusSuccess, out.Job.Status)
		require.Len(t, out.Logs, 2)
		require.Contains(t, out.Logs[1].Text, "oops \x1b[31mred\n", "JSON keeps the text as it was")
	})
}
