// Package phpexample_test runs the PHP example as its users would: a real
// PHP app (php-cli, PDO) and receiver (php -S) beside the real sluice binary
// on MariaDB, in both of the ways a PHP shop runs sluice: cron curling
// POST /v1/run, and `sluice work`.
package phpexample_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

const (
	orders = 60 // order ids 1..orders, split over the enqueuers
	// Concurrent `php enqueue.php` processes, each with its own range.
	enqueuers = 4
	token     = "php-example-token-Tk5Pz9Cm3Xr7Jb2G"
	secret    = "php-example-secret"
)

// The rules enqueue.php and receiver.php follow, restated so that the test
// can say what the database must hold.
func declined(order int) bool { return order%7 == 0 }
func busy(order int) bool     { return order%5 == 1 } // 503 before applying, first attempt
// jobKeyRe matches the Idempotency-Key sluice sends: job-<id>-<created µs>.
var jobKeyRe = regexp.MustCompile(`^job-(\d+)-\d+$`)

func lost(order int) bool { return order%6 == 2 } // applied, then a 503, first attempt

// requireTool skips when a tool is missing on a developer's machine, and
// fails in CI (SLUICE_TEST_REQUIRE_ALL=1), where the example must run.
func requireTool(t *testing.T, what string, check *exec.Cmd) {
	t.Helper()
	if out, err := check.CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s unavailable: %v %s", what, err, out)
		if testdb.RequireAll() {
			t.Fatalf("%s (SLUICE_TEST_REQUIRE_ALL=1: the PHP example must run; install php-cli, php-mysql and curl)", msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING PHP EXAMPLE TESTS: %s\n", msg)
		t.Skip(msg)
	}
}

func TestPHPExample(t *testing.T) {
	requireTool(t, "php with pdo_mysql", exec.Command("php", "-r", `exit(extension_loaded("pdo_mysql") ? 0 : 1);`))
	requireTool(t, "curl", exec.Command("curl", "--version"))
	server, dbName, appURL := databases(t)
	for _, mode := range []string{"cron", "work"} {
		t.Run(mode, func(t *testing.T) { runMode(t, mode, server, dbName, appURL) })
	}
}

// databases returns a connection to the MariaDB server of the test suite,
// and the name and URL of a database of the example's own on it: sluice's
// tables must be the real sluice_jobs (no test prefix) for the app's plain
// INSERT to be the one users write, so the test owns a whole database,
// named afresh so that concurrent runs never meet, and recreates it for
// each mode.
func databases(t *testing.T) (*sql.DB, string, string) {
	t.Helper()
	serverURL := testdb.URL("mysql", "")
	d, err := dburl.Open(serverURL, dburl.Options{})
	if err == nil {
		err = d.DB().Ping()
	}
	if err != nil {
		msg := fmt.Sprintf("mysql server unreachable at %s: %v", dburl.Redact(serverURL), err)
		if testdb.RequireAll() {
			t.Fatalf("%s (SLUICE_TEST_REQUIRE_ALL=1: every driver is required)", msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING MYSQL TESTS: %s\n", msg)
		t.Skip(msg)
	}
	t.Cleanup(func() { d.Close() })
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	name := "sluice_php_" + strings.TrimSuffix(testdb.Prefix(), "_")
	u.Path = "/" + name
	return d.DB(), name, u.String()
}

func waitListening(t *testing.T, addr string, out *testdb.SyncBuffer) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "nothing listens on %s: %s", addr, out)
}

// start runs a long-lived process in its own process group, stopped with
// SIGTERM to the group when the test ends (php -S forks its workers), and
// returns its output so far.
func start(t *testing.T, env []string, name string, args ...string) *testdb.SyncBuffer {
	t.Helper()
	out := &testdb.SyncBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out)
		}
	})
	return out
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s%s", name, strings.Join(args, " "), out, stderr.String())
	return string(out)
}

func runMode(t *testing.T, mode string, server *sql.DB, dbName, appURL string) {
	for _, q := range []string{"DROP DATABASE IF EXISTS " + dbName, "CREATE DATABASE " + dbName + " CHARACTER SET utf8mb4"} {
		_, err := server.Exec(q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() { server.Exec("DROP DATABASE IF EXISTS " + dbName) })

	receiverAddr, listen := testdb.FreeAddr(t), testdb.FreeAddr(t)
	// The database comes from the config file, as users run it.
	env := proctest.Env([]string{"APP_DB=" + appURL, "SLUICE_TOKEN=" + token, "HOOK_SECRET=" + secret,
		"RECEIVER_ADDR=" + receiverAddr, "SLUICE_LISTEN=" + listen,
		"PHP_CLI_SERVER_WORKERS=4"})
	sluice := func(args ...string) []string { return append([]string{"--config", "sluice.yaml"}, args...) }

	run(t, env, "php", "setup.php")
	require.Contains(t, run(t, env, bin, sluice("migrate")...), "schema version")
	recvOut := start(t, env, "php", "-S", receiverAddr, "receiver.php")
	waitListening(t, receiverAddr, recvOut)
	if mode == "work" {
		checkSignatures(t, "http://"+receiverAddr+"/jobs/order_sync")
	}

	stopCron := func() []runPass { return nil }
	if mode == "cron" {
		// serve without workers: every job below is run by a cron pass.
		out := start(t, env, bin, sluice("serve", "--no-workers")...)
		waitListening(t, listen, out)
		stopCron = cron(t, "http://"+listen+"/v1/run?max_jobs=50&max_seconds=20")
	} else {
		start(t, env, bin, sluice("work")...)
	}

	// The app places its orders from several processes at once.
	var wg sync.WaitGroup
	outs := make([]string, enqueuers)
	errs := make([]error, enqueuers)
	per := orders / enqueuers
	for i := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("php", "enqueue.php", fmt.Sprint(i*per+1), fmt.Sprint((i+1)*per))
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			outs[i] = string(out)
			if err != nil {
				errs[i] = fmt.Errorf("enqueue.php #%d: %w: %s", i, err, stderr.String())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	committed := map[int]int64{} // order -> job id, as the app saw it
	lines := strings.Split(strings.TrimSpace(strings.Join(outs, "")), "\n")
	require.Len(t, lines, orders, "one line per order")
	for _, line := range lines {
		var r struct {
			Order     int   `json:"order"`
			Job       int64 `json:"job"`
			Committed bool  `json:"committed"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		require.Equal(t, !declined(r.Order), r.Committed, line)
		if r.Committed {
			committed[r.Order] = r.Job
		}
	}
	wantCommitted := 0
	for o := 1; o <= orders; o++ {
		if !declined(o) {
			wantCommitted++
		}
	}
	require.Len(t, committed, wantCommitted, "every order was placed once")

	app, err := dburl.Open(appURL, dburl.Options{})
	require.NoError(t, err)
	defer app.Close()
	db := app.DB()
	// Every enqueue has committed by now, so the jobs are all there.
	testdb.WaitFor(t, 40*time.Second, "every job finishes", func() bool {
		var open int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM sluice_jobs WHERE status NOT IN ('success', 'failed', 'cancelled')`).Scan(&open))
		return open == 0
	})
	passes := stopCron()

	// From the database: one successful job per committed order, none for a
	// declined one, each applied exactly once, with the retries the receiver
	// asked for.
	jobs := map[int]int64{}
	wantRetries := 0
	rows, err := db.Query(`SELECT id, type, business_key, status, attempts, JSON_EXTRACT(payload, '$.order_id') FROM sluice_jobs`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var typ, key, status string
		var attempts, order int
		require.NoError(t, rows.Scan(&id, &typ, &key, &status, &attempts, &order))
		require.Equal(t, fmt.Sprintf("order:%d", order), key)
		_, ok := committed[order]
		require.True(t, ok, "job %d is for order %d, which was not committed", id, order)
		require.Equal(t, "order_sync", typ)
		require.Equal(t, "success", status, "job %d (%s)", id, key)
		want := 1
		if busy(order) || lost(order) {
			want = 2
			wantRetries++
		}
		require.Equal(t, want, attempts, "attempts of job %d (%s)", id, key)
		require.NotContains(t, jobs, order, "two jobs for order %d", order)
		jobs[order] = id
	}
	require.NoError(t, rows.Err())
	require.Equal(t, committed, jobs, "one job per committed order: the one the app's enqueue returned")

	rows, err = db.Query(`SELECT id, status, job_id, sync_count FROM orders`)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var order, syncs int
		var status string
		var job int64
		require.NoError(t, rows.Scan(&order, &status, &job, &syncs))
		require.Contains(t, committed, order, "order %d exists but its transaction rolled back", order)
		require.Equal(t, committed[order], job, "order %d's job_id", order)
		require.Equal(t, "synced", status, "order %d", order)
		require.Equal(t, 1, syncs, "order %d was synced %d times", order, syncs)
		seen++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(committed), seen)

	orderOf := map[int64]int{}
	for order, job := range committed {
		orderOf[job] = order
	}
	rows, err = db.Query(`SELECT idempotency_key, job_id, redeliveries FROM applied`)
	require.NoError(t, err)
	seen = 0
	lostAnswers := 0
	for rows.Next() {
		var key string
		var job int64
		var redeliveries int
		require.NoError(t, rows.Scan(&key, &job, &redeliveries))
		// The Idempotency-Key names one job (job-<id>-<created µs>), not
		// the order's business key, which a later job may reuse.
		m := jobKeyRe.FindStringSubmatch(key)
		require.NotNil(t, m, "applied key %q is not a job's Idempotency-Key", key)
		require.Equal(t, strconv.FormatInt(job, 10), m[1], "%s was applied for job %d", key, job)
		order, ok := orderOf[job]
		require.True(t, ok, "%s was applied for job %d, which no committed order has", key, job)
		want := 0
		if lost(order) && !busy(order) {
			want = 1 // the first delivery's answer was lost after its commit
			lostAnswers++
		}
		require.Equal(t, want, redeliveries, "redeliveries of %s", key)
		seen++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(committed), seen, "one applied key per committed order")
	require.Positive(t, lostAnswers, "the receiver's idempotency was exercised")

	if mode == "cron" {
		var done, retried, failed int
		for _, p := range passes {
			done += p.Done
			retried += p.Retried
			failed += p.Failed
		}
		require.Equal(t, len(committed), done, "the cron passes ran every job: %+v", passes)
		require.Equal(t, wantRetries, retried, "each retried attempt was counted by its pass as retried")
		require.Zero(t, failed, "no job failed for good")
	}
}

// runPass is the answer of POST /v1/run.
type runPass struct {
	OK      bool   `json:"ok"`
	Done    int    `json:"done"`
	Retried int    `json:"retried"`
	Failed  int    `json:"failed"`
	Skipped string `json:"skipped"`
}

// cron calls the run trigger with the curl binary about every second, as a
// crontab line would (only more often), until stop is called; stop waits
// for the call in flight, so that no pass's counts are lost, and returns
// every pass's answer. A curl that fails (-f: any HTTP error) fails the test.
func cron(t *testing.T, runURL string) (stop func() []runPass) {
	t.Helper()
	var mu sync.Mutex
	var passes []runPass
	var failures []string
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			out, err := exec.Command("curl", "-fsS", "--max-time", "60", "-X", "POST",
				"-H", "Authorization: Bearer "+token, runURL).CombinedOutput()
			var p runPass
			if err == nil {
				err = json.Unmarshal(out, &p)
			}
			mu.Lock()
			if err != nil || !p.OK {
				failures = append(failures, fmt.Sprintf("curl: %v: %s", err, out))
			} else {
				passes = append(passes, p)
			}
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	halt := func() { once.Do(func() { close(quit); <-done }) }
	t.Cleanup(halt)
	return func() []runPass {
		halt()
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, failures, "every cron call succeeds")
		return passes
	}
}

// checkSignatures sends the receiver requests signed wrongly, which it must
// refuse with 401, and one signed during a secret rotation (a stale v1 next
// to the good one), which it must accept: the order does not exist, so the
// answer is 422 and nothing is written.
func checkSignatures(t *testing.T, receiverURL string) {
	t.Helper()
	body := []byte(`{"id":1,"type":"order_sync","key":"order:999999","attempt":1,"max_attempts":8,"payload":{"order_id":999999}}`)
	post := func(sig string) (int, string) {
		req, err := http.NewRequest("POST", receiverURL, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "job-1-1700000000000000")
		req.Header.Set("X-Sluice-Key", "order:999999")
		if sig != "" {
			req.Header.Set("X-Sluice-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	now := time.Now()
	for name, sig := range map[string]string{
		"no signature":    "",
		"wrong secret":    webhook.Sign("not-the-secret", now, body),
		"another body":    webhook.Sign(secret, now, []byte(`{"id":2}`)),
		"ten minutes old": webhook.Sign(secret, now.Add(-10*time.Minute), body),
		"no v1":           strings.Split(webhook.Sign(secret, now, body), ",")[0],
	} {
		code, answer := post(sig)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", name, answer)
	}
	good := webhook.Sign(secret, now, body)
	old := webhook.Sign("the-old-secret", now, body)
	rotated := good[:strings.Index(good, ",")] + old[strings.Index(old, ","):] + good[strings.Index(good, ","):]
	code, answer := post(rotated)
	require.Equal(t, http.StatusUnprocessableEntity, code, answer)
	require.Contains(t, answer, "order 999999 does not exist")
}
