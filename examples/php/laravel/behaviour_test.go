package laravel_test

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestLaravelQueueRunsJobsAsQueueWork dispatches the jobs of
// app/Jobs/Checks and ProcessPodcast with the framework's API (checks.php),
// lets `sluice work` deliver them, and checks what queue:work would have
// done: the class's $tries (one attempt without it), $backoff, fail() with
// its reason, release() on the last attempt failing through
// MaxAttemptsExceededException (failed(), the batch's catch and finally,
// the unique lock freed), ShouldBeUniqueUntilProcessing, the queue events
// and the exception handler's report().
func TestLaravelQueueRunsJobsAsQueueWork(t *testing.T) {
	a := newLaravelApp(t)

	// The route is outside the skeleton's api group: no /api prefix, no throttle.
	resp, err := http.Get("http://" + a.receiver + "/api/ping")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "the app's own api routes")
	resp, err = http.Post("http://"+a.receiver+"/api/sluice/jobs", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "sluice's route is not under /api")

	phptest.Run(t, a.dir, a.env, "php", "checks.php", "dispatch")
	require.Equal(t, 0, a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE CAST(payload AS CHAR) LIKE '%\\\\u0000%'`), "no NUL escape in a payload")
	phptest.Start(t, a.dir, a.env, bin, "--config", "sluice.yaml", "work")
	open := func() int {
		return a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE status NOT IN ('success', 'failed', 'cancelled')`)
	}
	testdb.WaitFor(t, 90*time.Second, "every job ends", func() bool { return open() == 0 })

	job := func(class, status string, attempts, maxAttempts int) string {
		t.Helper()
		var st, lastError string
		var at, max int
		require.NoError(t, a.db.QueryRow(`SELECT status, attempts, max_attempts, COALESCE(last_error, '') FROM `+a.prefix+`jobs
			WHERE JSON_VALUE(payload, '$.displayName') = ? ORDER BY id LIMIT 1`, class).Scan(&st, &at, &max, &lastError))
		require.Equal(t, []any{status, attempts, maxAttempts}, []any{st, at, max}, "%s: status, attempts, max_attempts (%s)", class, lastError)
		return lastError
	}
	logged := func(class, event, detail string) int { // detail "*": any
		t.Helper()
		return a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event = ? AND (? = '*' OR detail = ?)`, class, event, detail, detail)
	}
	const checks = `App\Jobs\Checks\`

	job(`App\Jobs\ProcessPodcast`, "success", 1, 2)
	require.Equal(t, 1, logged(`App\Jobs\ProcessPodcast`, "handle", `7:Episode "7"`), "protected and private properties arrive intact")

	require.Contains(t, job(checks+"NoTries", "failed", 1, 2), "sms gateway timed out", "no $tries: one attempt, as queue:work --tries=1")
	require.Equal(t, 1, logged(checks+"NoTries", "handle", "*"))
	require.Equal(t, 1, logged(checks+"NoTries", "failed", "sms gateway timed out"))
	require.Equal(t, 1, a.count(t, `SELECT COUNT(*) FROM {p}reported WHERE class = 'RuntimeException' AND message = 'sms gateway timed out'`),
		"the exception that fails a job for good is reported once")

	require.Contains(t, job(checks+"ReleasedOnLastAttempt", "failed", 3, 3), "has been attempted too many times")
	require.Equal(t, 4, a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event = 'handle'`, checks+"ReleasedOnLastAttempt"),
		"each of the two jobs (alone, in the batch) ran its $tries = 2 attempts")
	require.Equal(t, 2, logged(checks+"ReleasedOnLastAttempt", "failed", `Illuminate\Queue\MaxAttemptsExceededException`),
		"failed() runs for a job released on its last attempt")
	require.Equal(t, 1, logged("batch", "catch", ""), "the batch's catch")
	require.Equal(t, 1, logged("batch", "finally", ""), "the batch's finally")
	require.Equal(t, 3, a.count(t, `SELECT COUNT(*) FROM {p}reported WHERE class = 'Illuminate\\Queue\\MaxAttemptsExceededException'`),
		"reported for the two released on their last attempt and the RetryUntil job delivered too late")

	require.Contains(t, job(checks+"FailsWithReason", "failed", 1, 6), "coupon expired", "fail($e) keeps its reason")
	require.Equal(t, 1, logged(checks+"FailsWithReason", "failing", "DomainException"))

	job(checks+"Backoff", "success", 3, 4)
	var gap1, gap2 float64
	require.NoError(t, a.db.QueryRow(`SELECT
		TIMESTAMPDIFF(MICROSECOND, MAX(CASE WHEN detail = '1' THEN at END), MAX(CASE WHEN detail = '2' THEN at END)) / 1e6,
		TIMESTAMPDIFF(MICROSECOND, MAX(CASE WHEN detail = '2' THEN at END), MAX(CASE WHEN detail = '3' THEN at END)) / 1e6
		FROM `+a.prefix+`log WHERE job = ? AND event = 'handle'`, checks+"Backoff").Scan(&gap1, &gap2))
	require.GreaterOrEqual(t, gap1, 2.0, "$backoff = [2, 3]: the first retry waits 2 s")
	require.GreaterOrEqual(t, gap2, 3.0, "$backoff = [2, 3]: the second waits 3 s")

	require.Equal(t, 2, a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE JSON_VALUE(payload, '$.displayName') = ? AND status = 'success'`, checks+"UntilProcessing"),
		"a dispatch while a ShouldBeUniqueUntilProcessing job runs is a new job")
	require.Equal(t, 1, logged(checks+"UntilProcessing", "handle", "2"))

	for _, class := range []string{checks + "FailsWithReason", checks + "Backoff"} {
		require.Equal(t, a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event = 'before'`, class),
			a.count(t, `SELECT COUNT(*) FROM {p}log WHERE job = ? AND event = 'after'`, class)+map[string]int{checks + "Backoff": 2}[class],
			"%s: Queue::before on each attempt, Queue::after on each that did not throw (fail() does not)", class)
	}
	require.Equal(t, 6, a.count(t, `SELECT COUNT(*) FROM {p}log WHERE event = 'failing'`), "Queue::failing once per failed job")

	require.Contains(t, job(checks+"MaxExceptions", "failed", 2, 2147483647), "upstream down", "$tries = 0: unlimited; $maxExceptions = 2")
	require.Equal(t, 1, logged(`App\Jobs\ProcessPodcast`, "handle", "9:chain 2"), "a chain runs its next job")

	// retryUntil() instead of $tries: retried while it lasts; once past,
	// failed at the delivery without running handle().
	var ends []string // in dispatch order: the in-time job, then the late one
	rows, err := a.db.Query(`SELECT CONCAT(status, ' ', attempts) FROM `+a.prefix+`jobs
		WHERE JSON_VALUE(payload, '$.displayName') = ? ORDER BY id`, checks+"RetryUntil")
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		ends = append(ends, s)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.Equal(t, []string{"success 3", "failed 1"}, ends,
		"retryUntil an hour ahead: success at the third attempt; already past: failed at the first delivery")
	require.Equal(t, 3, logged(checks+"RetryUntil", "handle", "*"), "handle() ran the in-time job's three attempts, never the late one")
	require.Equal(t, 1, logged(checks+"RetryUntil", "failed", `late Illuminate\Queue\MaxAttemptsExceededException`))
	job(checks+"ReleasedByMiddleware", "success", 2, 3)
	require.Equal(t, 1, logged(checks+"ReleasedByMiddleware", "released by middleware", "1"))
	require.Equal(t, 1, logged(checks+"ReleasedByMiddleware", "handle", "2"), "the middleware's release, then handle() on the second attempt")

	onSluice := a.outcome(t)

	// `sluice jobs retry` instead of queue:retry: NoTries gets its one attempt afresh.
	var noTries string
	require.NoError(t, a.db.QueryRow(`SELECT id FROM `+a.prefix+`jobs WHERE JSON_VALUE(payload, '$.displayName') = ?`, checks+"NoTries").Scan(&noTries))
	phptest.Run(t, a.dir, a.env, bin, "--config", "sluice.yaml", "jobs", "retry", noTries)
	testdb.WaitFor(t, 60*time.Second, "the retried job ends", func() bool { return open() == 0 && logged(checks+"NoTries", "failed", "*") == 2 })
	require.Contains(t, job(checks+"NoTries", "failed", 2, 2), "sms gateway timed out")
	require.Equal(t, 2, logged(checks+"NoTries", "handle", "*"), "ran again, once")

	// The unique jobs failed for good: their locks are free, a new dispatch is a new job.
	phptest.Run(t, a.dir, a.env, "php", "checks.php", "unique-again")
	require.Equal(t, 3, a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE JSON_VALUE(payload, '$.displayName') = ?`, checks+"ReleasedOnLastAttempt"))

	testdb.WaitFor(t, 60*time.Second, "the new unique job ends", func() bool { return open() == 0 })

	// The same jobs on Laravel's own database queue, worked as queue:work
	// does: the same handle() runs per attempt, failed() calls, events,
	// batch callbacks and reported exceptions.
	for _, table := range []string{"log", "reported", "job_batches"} {
		_, err := a.db.Exec(`DELETE FROM ` + a.prefix + table)
		require.NoError(t, err)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(a.dir, "storage", "cache")), "the unique locks")
	database := append(append([]string{}, a.env...), "QUEUE_CONNECTION=database")
	phptest.Run(t, a.dir, database, "php", "checks.php", "dispatch")
	require.JSONEq(t, `{"left":0}`, phptest.Run(t, a.dir, database, "php", "checks.php", "work-database"))
	require.Equal(t, a.outcome(t), onSluice, "the sluice connection and Laravel's database queue, the same jobs")
}

// outcome is what the app observed of its jobs: the log of handle(),
// failed(), queue events and batch callbacks, and the reported exceptions.
func (a *laravelApp) outcome(t *testing.T) []string {
	t.Helper()
	var out []string
	rows, err := a.db.Query(`SELECT CONCAT(job, ' ', event, ' ', detail) FROM ` + a.prefix + `log
		UNION ALL SELECT CONCAT('reported ', class, ': ', message) FROM ` + a.prefix + `reported`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	sort.Strings(out)
	return out
}

// TestLaravelQueueGuideDifferences reads the table "What differs from Laravel's
// own queue" of docs/php.md and its Chinese copy: the rows are the ones the
// adapter's tests stand behind, in both.
func TestLaravelQueueGuideDifferences(t *testing.T) {
	want := []string{"delivery", "attempts", "backoff", "retry-after cap", "timeout", "unique", "cancel", "failed jobs", "string jobs", "payload"}
	for doc, heading := range map[string]string{"docs/php.md": "### What differs from Laravel's own queue", "docs/zh/php.md": "### 与 Laravel 自带队列的不同之处"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", doc))
		require.NoError(t, err)
		_, section, ok := strings.Cut(string(b), heading+"\n")
		require.True(t, ok, "%s: %q", doc, heading)
		var got []string
		for _, line := range strings.Split(section, "\n") {
			if strings.HasPrefix(line, "#") {
				break
			}
			if k, ok := strings.CutPrefix(line, "| `"); ok {
				got = append(got, k[:strings.Index(k, "`")])
			}
		}
		require.Equal(t, want, got, "%s: the rows of the table", doc)
	}
}

// TestLaravelQueueFollowsTheConnection dispatches after DB::reconnect()
// inside a transaction that rolls back (the job leaves with it), and after
// DB::disconnect() and after the server dropped the connection (the job is
// written on a new connection); then a unique
// job's $uniqueFor, which involves no worker either.
func TestLaravelQueueFollowsTheConnection(t *testing.T) {
	a := newLaravelApp(t)
	require.JSONEq(t, `{"size":3}`, phptest.Run(t, a.dir, a.env, "php", "checks.php", "reconnect"))
	var got []string
	rows, err := a.db.Query(`SELECT CAST(payload AS CHAR) FROM ` + a.prefix + `jobs WHERE queue = 'reconnect' ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		got = append(got, laravelPayload(t, p).Data.Command)
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 3)
	require.Contains(t, got[0], "before reconnect")
	require.Contains(t, got[1], "after disconnect")
	require.Contains(t, got[2], "after a dropped connection")

	require.JSONEq(t, `{"size":2}`, phptest.Run(t, a.dir, a.env, "php", "checks.php", "unique-for"),
		"$uniqueFor: a dispatch within it is dropped, one after it is a new job even while the first waits")
}
