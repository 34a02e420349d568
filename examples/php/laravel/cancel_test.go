package laravel_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestLaravelJobCancelledWhileRunning: a queued Laravel job, dispatched on
// the sluice connection, runs long in the app's webhook route (php -S);
// an operator cancels it with `sluice jobs cancel ID` while it runs. sluice
// aborts the request; the job, asking $this->job->isCancelled() between
// its steps, stops before its end ("finished" is never logged). The job
// ends cancelled with the operator in its history, failed() is not called
// (a cancel is not a failure, as for the jobs of a cancelled batch: docs/php.md),
// no exception is reported, and what the route answered afterwards is
// dropped. Laravel's own queue:work cannot cancel a running job, so
// only sluice's behaviour is asserted, not compared with it.
func TestLaravelJobCancelledWhileRunning(t *testing.T) {
	a := newLaravelApp(t)
	const class = `App\Jobs\Checks\RunsUntilCancelled`
	logged := func(event, detail string) int {
		return a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event = ? AND detail = ?`, class, event, detail)
	}
	phptest.Run(t, a.dir, a.env, "php", "checks.php", "long")
	w := phptest.Start(t, a.dir, a.env, bin, "--config", "testdata/cancel.yaml", "work")
	testdb.WaitFor(t, time.Minute, "the job running", func() bool { return logged("handle", "started") == 1 })
	var id int64
	require.NoError(t, a.db.QueryRow(`SELECT id FROM `+a.prefix+`jobs WHERE JSON_VALUE(payload, '$.displayName') = ?`, class).Scan(&id))

	out := phptest.Run(t, a.dir, a.env, bin, "--config", "testdata/cancel.yaml", "jobs", "cancel", strconv.FormatInt(id, 10))
	require.Contains(t, out, fmt.Sprintf("job %d cancelled", id))
	testdb.WaitFor(t, time.Minute, "the job stopped by the cancel", func() bool { return logged("handle", "stopped: cancelled") == 1 })

	var status, lastError string
	var attempts int
	require.NoError(t, a.db.QueryRow(`SELECT status, attempts, COALESCE(last_error, '') FROM `+a.prefix+`jobs WHERE id = ?`, id).
		Scan(&status, &attempts, &lastError))
	require.Equal(t, "cancelled", status)
	require.Equal(t, 1, attempts)
	require.True(t, strings.HasPrefix(lastError, "cancelled by an operator: cli:"), lastError)
	show := phptest.Run(t, a.dir, a.env, bin, "--config", "testdata/cancel.yaml", "jobs", "show", strconv.FormatInt(id, 10))
	require.Contains(t, show, "cancelled by an operator: cli:")
	testdb.WaitFor(t, time.Minute, "the aborted request's outcome dropped", func() bool {
		return strings.Contains(w.String(), fmt.Sprintf("what it reported is dropped\" job_id=%d", id))
	})

	require.Zero(t, logged("handle", "finished"), "the cancelled job reached its end")
	require.Zero(t, a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event IN ('failed', 'failing')`, class),
		"failed() or Queue::failing ran for a cancel")
	require.Zero(t, a.count(t, `SELECT COUNT(*) FROM {p}reported`), "an exception was reported for a cancel")
	// Nothing ran it again: it stays cancelled with its one attempt.
	require.Equal(t, 1, logged("handle", "started"))
	require.Equal(t, 1, a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE id = ? AND status = 'cancelled' AND attempts = 1`, id))
}
