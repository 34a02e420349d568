// Package laravel_test runs the Laravel example against Debian's
// php-laravel-framework (Illuminate 8.83): a throwaway app installs
// sluice/sluice with Composer, dispatches SyncOrder jobs inside
// DB::transaction (some rolled back, some afterCommit, some delayed), a
// unique BuildReport from two processes and a ChargeCard that always fails; `sluice work` delivers them to the
// webhook route under php -S, which runs the job classes with no queue:work.
package laravel_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

const orders = 30

// appKey is the test app's APP_KEY, in Laravel's base64: form.
const appKey = "base64:c2x1aWNlLWxhcmF2ZWwtdGVzdC1hcHAta2V5LTAwMDA="

func TestLaravelQueue(t *testing.T) {
	phptest.Require(t, "pdo_mysql", "curl")
	phptest.RequireFile(t, "/usr/share/php/Illuminate/autoload.php", "php-laravel-framework")
	d, tg := testdb.OpenURL(t, "mysql")
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	pass, _ := u.User.Password()
	app := phptest.InstallApp(t, ".")
	receiver := testdb.FreeAddr(t)
	env := proctest.Env([]string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "APP_PREFIX=" + tg.Prefix,
		"DB_HOST=" + u.Hostname(), "DB_PORT=" + u.Port(), "DB_DATABASE=" + strings.TrimPrefix(u.Path, "/"),
		"DB_USERNAME=" + u.User.Username(), "DB_PASSWORD=" + pass,
		"HOOK_SECRET=laravel-secret", "APP_KEY=" + appKey, "RECEIVER_ADDR=" + receiver, "PHP_CLI_SERVER_WORKERS=4"})
	phptest.Run(t, app, env, "php", "setup.php")
	out := phptest.Start(t, app, env, "php", "-S", receiver, "-t", "public", "public/index.php")
	phptest.WaitListening(t, receiver, out)

	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], err = phptest.Output(app, env, "php", "enqueue.php", fmt.Sprint(i*orders/2+1), fmt.Sprint((i+1)*orders/2))
		}()
	}
	wg.Wait()
	require.NoError(t, err)
	committed := 0
	for _, line := range strings.Split(strings.TrimSpace(strings.Join(outs, "")), "\n") {
		var r struct {
			Order     int
			Committed bool
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		require.Equal(t, r.Order%7 != 0, r.Committed, line)
		if r.Committed {
			committed++
		}
	}
	db := d.DB()
	jobs := tg.Prefix + "jobs"
	// Written before any worker runs: what dispatch() stored.
	var n, delayed, unique int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE type = 'laravel' AND queue = 'orders' AND max_attempts = 5`).Scan(&n))
	require.Equal(t, committed, n, "a job per committed order, on the onQueue() queue, with the class's $tries and the delivery on which Laravel fails a job released on its last attempt")
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE queue = 'orders' AND next_run_at >= created_at + INTERVAL 1900000 MICROSECOND`).Scan(&delayed))
	want := 0
	for o := 1; o <= orders; o++ {
		if o%4 == 0 && o%7 != 0 {
			want++
		}
	}
	require.Equal(t, want, delayed, "delay() sets the run time")
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE business_key = 'laravel-unique:App\\Jobs\\BuildReport:2026-12-01'`).Scan(&unique))
	require.Equal(t, 1, unique, "one BuildReport for two processes' dispatches")

	require.JSONEq(t, `{"in_tx":1,"in_tx_after_commit_dispatch":1,"committed":2}`, phptest.Run(t, app, env, "php", "aftercommit.php"),
		"a job is written inside the transaction, an afterCommit() one once it commits")
	_, err = db.Exec(`DELETE FROM ` + jobs + ` WHERE queue = 'audit'`)
	require.NoError(t, err)
	phptest.Run(t, app, env, "php", "failing.php", "4242")
	phptest.Start(t, app, env, bin, "--config", "sluice.yaml", "work")
	testdb.WaitFor(t, 60*time.Second, "every job finishes", func() bool {
		var open int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE status NOT IN ('success', 'failed', 'cancelled')`).Scan(&open))
		return open == 0
	})
	var status, lastError string
	var attempts int
	require.NoError(t, db.QueryRow(`SELECT status, attempts, last_error FROM `+jobs+` WHERE JSON_VALUE(payload, '$.displayName') = 'App\\Jobs\\ChargeCard'`).Scan(&status, &attempts, &lastError))
	require.Equal(t, "failed", status, "a job that always throws fails for good in sluice")
	require.Equal(t, 2, attempts, "after the class's $tries")
	require.Contains(t, lastError, "card of order 4242 declined by the partner")
	var failures int
	var failure string
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), MAX(error) FROM `+tg.Prefix+`failures WHERE order_id = 4242`).Scan(&failures, &failure))
	require.Equal(t, 1, failures, "failed() ran once")
	require.Equal(t, "card of order 4242 declined by the partner", failure)

	rows, err := db.Query(`SELECT id, status, attempts, CAST(payload AS CHAR) FROM ` + jobs + ` WHERE queue = 'orders'`)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var status, payload string
		var attempts int
		require.NoError(t, rows.Scan(&id, &status, &attempts, &payload))
		p := laravelPayload(t, payload)
		var order int
		_, err := fmt.Sscanf(p.Data.Command[strings.Index(p.Data.Command, "orderId\";i:")+len("orderId\";i:"):], "%d", &order)
		require.NoError(t, err, p.Data.Command)
		require.Equal(t, "success", status, "job %d (order %d)", id, order)
		wantAttempts := 1
		if order%5 == 1 {
			wantAttempts = 2 // released once
		}
		require.Equal(t, wantAttempts, attempts, "job %d (order %d)", id, order)
	}
	require.NoError(t, rows.Err())
	var synced, wrong int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(sync_count <> 1 OR status <> 'synced'), 0) FROM `+tg.Prefix+`orders`).Scan(&synced, &wrong))
	require.Equal(t, committed, synced, "no order from a rolled-back transaction")
	require.Zero(t, wrong, "each order synced exactly once")
	var reports int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+tg.Prefix+`reports`).Scan(&reports))
	require.Equal(t, 1, reports)
}

// laravelPayload opens a job's sluice payload: Laravel's own, base64 in "laravel".
func laravelPayload(t *testing.T, payload string) (p struct {
	MaxTries *int
	Data     struct{ CommandName, Command string }
}) {
	t.Helper()
	var env struct{ Laravel []byte }
	require.NoError(t, json.Unmarshal([]byte(payload), &env), payload)
	require.NoError(t, json.Unmarshal(env.Laravel, &p), payload)
	return p
}
