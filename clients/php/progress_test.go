package phpclient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// shownJob is what `sluice jobs show ID --json` prints of a job's progress
// and history.
type shownJob struct {
	Status   string
	Attempts int
	Progress *shownProgress
	History  []struct {
		Attempt  int
		Outcome  string
		Progress *shownProgress
	}
}

type shownProgress struct {
	Done, Total int64
	Message     string
}

// The user's path of issue 38's receiver progress: a PHP receiver (php -S,
// testdata/progress_receiver.php) handles a real sluice webhook job and
// reports its progress with Sluice\Api::progress and the delivery's
// progress token, without an API token. Its first attempt reports 1 of 3
// and asks for a retry; the second reports 1, 2 and 3 of 3 and succeeds.
// `sluice jobs show` sees each report while the job runs, and the job
// keeps the last one when it is done. The first attempt's token, used while
// the second runs, is refused: Api::progress throws an ApiException of
// status 409 that says why, rather than failing silently.
func TestReceiverReportsProgressThroughTheLibrary(t *testing.T) {
	phptest.Require(t, "json", "hash", "curl")
	testdb.ForEach(t, func(t *testing.T, name string) {
		_, tg := testdb.OpenURL(t, name)
		dir, steps := t.TempDir(), t.TempDir()
		receiver, listen := testdb.FreeAddr(t), testdb.FreeAddr(t)
		const secret = "progress-hook-secret-Wq4Jx8Zr2Lk6"
		cfg := "db: " + tg.URL + "\nlisten: " + listen + "\ntypes:\n  report:\n" +
			"    http: { url: \"http://" + receiver + "/\", timeout: 3m, secret: " + secret + " }\n" +
			"    backoff: { base: 1s, max: 1s }\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(cfg), 0o644))
		env := proctest.Env([]string{"SLUICE_PREFIX=" + tg.Prefix, "SLUICE_URL=http://" + listen,
			"HOOK_SECRET=" + secret, "PROGRESS_DIR=" + steps})
		recv := phptest.Start(t, filepath.Join(phptest.ClientDir(), "testdata"), env, "php", "-S", receiver, "progress_receiver.php")
		phptest.WaitListening(t, receiver, recv)
		srv := phptest.Start(t, dir, env, bin, "--config", "sluice.yaml", "serve")
		phptest.WaitListening(t, listen, srv)

		out := phptest.Run(t, dir, env, bin, "--config", "sluice.yaml", "enqueue", "report")
		var enq struct{ ID int64 }
		require.NoError(t, json.Unmarshal([]byte(out), &enq), out)
		show := func() shownJob {
			out := phptest.Run(t, dir, env, bin, "--config", "sluice.yaml", "jobs", "show", strconv.FormatInt(enq.ID, 10), "--json")
			var j shownJob
			require.NoError(t, json.Unmarshal([]byte(out), &j), out)
			return j
		}
		// running waits until the second attempt runs with done of 3 shown.
		running := func(done int64, message string) {
			t.Helper()
			testdb.WaitFor(t, time.Minute, "attempt 2 showing "+message, func() bool {
				j := show()
				return j.Status == "processing" && j.Attempts == 2 && j.Progress != nil &&
					*j.Progress == shownProgress{done, 3, message}
			})
		}
		running(1, "step 1")
		j := show()
		require.Len(t, j.History, 1, "the first attempt's entry")
		require.Equal(t, "retry", j.History[0].Outcome)
		require.Equal(t, &shownProgress{1, 3, "first try"}, j.History[0].Progress, "the first attempt's entry keeps its last report")

		require.NoError(t, os.WriteFile(filepath.Join(steps, "go2"), nil, 0o644))
		running(2, "step 2")
		require.NoError(t, os.WriteFile(filepath.Join(steps, "go3"), nil, 0o644))

		testdb.WaitFor(t, time.Minute, "the job done", func() bool { return show().Status == "success" })
		j = show()
		require.Equal(t, &shownProgress{3, 3, "step 3"}, j.Progress, "the job keeps its last report")
		require.Len(t, j.History, 2)
		require.Equal(t, "success", j.History[1].Outcome)
		// A receiver's reports reach the job's row through the API; the
		// worker reads the row's for the entry (Result.ProgressElsewhere).
		require.Equal(t, &shownProgress{3, 3, "step 3"}, j.History[1].Progress, "the second attempt's entry keeps its last report")

		b, err := os.ReadFile(filepath.Join(steps, "stale.json"))
		require.NoError(t, err, "the receiver tried the stale token")
		var stale struct {
			Refused bool
			Status  int
			Message string
		}
		require.NoError(t, json.Unmarshal(b, &stale), string(b))
		require.True(t, stale.Refused, "Api::progress with the first attempt's token returned without an exception: %s", b)
		require.Equal(t, 409, stale.Status, string(b))
		require.Contains(t, stale.Message, "/progress: 409: ", string(b))
	})
}
