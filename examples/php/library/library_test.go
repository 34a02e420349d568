// Package library_test runs the example on the sluice/sluice package as a
// PHP team would: a throwaway app installs the package with Composer from
// the repository, enqueues inside its order transactions (some rolled
// back, some submitting a taken key again), and a php -S receiver built on
// the library applies each job once, fed by the real sluice binary in
// three ways: `sluice run` from cron (SQLite), `sluice work` (MariaDB) and
// `php cron.php` calling POST /v1/run (PostgreSQL).
package library_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

const (
	orders    = 40
	enqueuers = 2
	token     = "library-example-token-Fs8Lq2Vy6Wd4Hn1Z"
	secret    = "library-example-secret"
)

func declined(order int) bool { return order%7 == 0 }
func busy(order int) bool     { return order%5 == 1 }

func TestLibraryExample(t *testing.T) {
	phptest.Require(t, "pdo", "json", "hash", "curl")
	testdb.ForEach(t, func(t *testing.T, name string) {
		phptest.Require(t, phptest.Extension(name))
		d, tg := testdb.OpenURL(t, name)
		app := phptest.InstallApp(t, ".")
		receiver, listen := testdb.FreeAddr(t), testdb.FreeAddr(t)
		env := proctest.Env(append(appEnv(t, tg.URL), "SLUICE_DB="+tg.URL, "SLUICE_PREFIX="+tg.Prefix, "APP_PREFIX="+tg.Prefix,
			"SLUICE_TOKEN="+token, "HOOK_SECRET="+secret, "RECEIVER_ADDR="+receiver, "SLUICE_LISTEN="+listen,
			"SLUICE_URL=http://"+listen, "PHP_CLI_SERVER_WORKERS=4"))
		// As README.md here says: the migration with the config writes the
		// types' settings (sluice_types) that the app's enqueues then take.
		phptest.Run(t, app, env, bin, "--config", "sluice.yaml", "migrate")
		phptest.Run(t, app, env, "php", "setup.php")
		recv := phptest.Start(t, app, env, "php", "-S", receiver, "receiver.php")
		phptest.WaitListening(t, receiver, recv)
		checkForgery(t, "http://"+receiver+"/jobs/order_sync")

		var stop func() error
		switch name {
		case "sqlite":
			stop = cron(t, func() error {
				_, err := phptest.Output(app, env, bin, "--config", "sluice.yaml", "run", "--max-jobs", "50", "--max-seconds", "20")
				return err
			})
		case "mysql":
			phptest.Start(t, app, env, bin, "--config", "sluice.yaml", "work")
			stop = func() error { return nil }
		default:
			out := phptest.Start(t, app, env, bin, "--config", "sluice.yaml", "serve", "--no-workers")
			phptest.WaitListening(t, listen, out)
			stop = cron(t, func() error {
				var pass struct{ OK bool }
				line, err := phptest.Output(app, env, "php", "cron.php")
				if err == nil {
					err = json.Unmarshal([]byte(line), &pass)
				}
				if err == nil && !pass.OK {
					err = fmt.Errorf("php cron.php: %s", line)
				}
				return err
			})
		}

		committed := enqueue(t, app, env)
		db := d.DB()
		jobs := tg.Prefix + "jobs"
		typeSettings(t, db, tg.Prefix)
		testdb.WaitFor(t, 60*time.Second, "every job finishes", func() bool {
			var open int
			require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE status NOT IN ('success', 'failed', 'cancelled')`).Scan(&open))
			return open == 0
		})
		require.NoError(t, stop(), "every cron pass succeeds")
		check(t, db, tg.Prefix, committed)
	})
}

func appEnv(t *testing.T, dbURL string) []string {
	dsn, user, pass := phptest.DSN(t, dbURL)
	return []string{"APP_DSN=" + dsn, "APP_DB_USER=" + user, "APP_DB_PASSWORD=" + pass}
}

// enqueue places the orders from several processes at once and returns the
// job of each committed order, as the app saw it.
func enqueue(t *testing.T, app string, env []string) map[int]int64 {
	var wg sync.WaitGroup
	outs := make([]string, enqueuers)
	per := orders / enqueuers
	for i := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = phptest.Run(t, app, env, "php", "enqueue.php", fmt.Sprint(i*per+1), fmt.Sprint((i+1)*per))
		}()
	}
	wg.Wait()
	committed := map[int]int64{}
	lines := strings.Split(strings.TrimSpace(strings.Join(outs, "")), "\n")
	require.Len(t, lines, orders)
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
	return committed
}

// check reads the database: one successful job per committed order, the
// one the app's enqueue returned, none for a declined order; each order
// synced exactly once; a retry where the receiver was busy.
func check(t *testing.T, db *sql.DB, prefix string, committed map[int]int64) {
	rows, err := db.Query(`SELECT id, business_key, status, attempts FROM ` + prefix + `jobs`)
	require.NoError(t, err)
	seen := map[int]int64{}
	for rows.Next() {
		var id int64
		var key, status string
		var attempts, order int
		require.NoError(t, rows.Scan(&id, &key, &status, &attempts))
		_, err := fmt.Sscanf(key, "order:%d", &order)
		require.NoError(t, err, key)
		require.Contains(t, committed, order, "job %d is for order %d, which rolled back", id, order)
		require.Equal(t, string(sluicetype.StatusSuccess), status, "job %d (%s)", id, key)
		want := 1
		if busy(order) {
			want = 2
		}
		require.Equal(t, want, attempts, "attempts of job %d (%s)", id, key)
		require.NotContains(t, seen, order, "two jobs for order %d", order)
		seen[order] = id
	}
	require.NoError(t, rows.Err())
	require.Equal(t, committed, seen)

	rows, err = db.Query(`SELECT id, job_id, status, sync_count FROM ` + prefix + `orders`)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var order, syncs int
		var job int64
		var status string
		require.NoError(t, rows.Scan(&order, &job, &status, &syncs))
		require.Equal(t, committed[order], job, "order %d", order)
		require.Equal(t, "synced", status, "order %d", order)
		require.Equal(t, 1, syncs, "order %d synced %d times", order, syncs)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(committed), n, "an order row per committed order, none for a declined one")
	var applied int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+prefix+`applied`).Scan(&applied))
	require.Equal(t, len(committed), applied)
}

// typeSettings checks that the jobs the app enqueued without max_attempts
// got their type's from sluice.yaml (6, not the default 5): `sluice
// migrate --config` recorded it in sluice_types, which the insert trigger
// applies to the library's plain inserts.
func typeSettings(t *testing.T, db *sql.DB, prefix string) {
	var n, wrong int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(CASE WHEN max_attempts <> 6 THEN 1 ELSE 0 END), 0) FROM `+prefix+`jobs`).Scan(&n, &wrong))
	require.NotZero(t, n, "the app enqueued jobs")
	require.Zero(t, wrong, "every job has its type's max_attempts from sluice.yaml")
}

// cron runs pass about every half second until stop, which waits for the
// pass in flight and returns the first pass's error.
func cron(t *testing.T, pass func() error) (stop func() error) {
	quit, done := make(chan struct{}), make(chan struct{})
	var first error
	go func() {
		defer close(done)
		for {
			if err := pass(); err != nil && first == nil {
				first = err
			}
			select {
			case <-quit:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() error {
		once.Do(func() { close(quit); <-done })
		return first
	}
	t.Cleanup(func() { stop() })
	return stop
}

// checkForgery sends the receiver a request signed with another secret:
// the library refuses it with 401 and applies nothing.
func checkForgery(t *testing.T, url string) {
	body := []byte(`{"id":1,"type":"order_sync","key":"order:1","attempt":1,"max_attempts":5,"payload":{"order_id":1}}`)
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	require.NoError(t, err)
	ts := fmt.Sprint(time.Now().Unix())
	req.Header.Set("X-Sluice-Signature", "t="+ts+",v1="+strings.Repeat("ab", 32))
	req.Header.Set("Idempotency-Key", "job-1-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
