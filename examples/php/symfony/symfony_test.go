// Package symfony_test runs the Symfony Messenger example against Debian's
// php-symfony-messenger (5.4) on PostgreSQL: a throwaway app installs
// sluice/sluice with Composer, dispatches SyncOrder messages inside its
// order transactions (some rolled back, some delayed), and `sluice work`
// delivers them to the webhook controller under php -S, which hands them
// to the bus, with no messenger:consume.
package symfony_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

const orders = 20

func TestMessengerTransport(t *testing.T) {
	phptest.Require(t, "pdo_pgsql", "curl")
	phptest.RequireFile(t, "/usr/share/php/Symfony/Component/Messenger/autoload.php", "php-symfony-messenger")
	d, tg := testdb.OpenURL(t, "postgres")
	app := phptest.InstallApp(t, ".")
	receiver := testdb.FreeAddr(t)
	dsn, user, pass := phptest.DSN(t, tg.URL)
	env := proctest.Env([]string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "APP_PREFIX=" + tg.Prefix,
		"APP_DSN=" + dsn, "APP_DB_USER=" + user, "APP_DB_PASSWORD=" + pass,
		"HOOK_SECRET=symfony-secret", "APP_SECRET=symfony-app-secret", "RECEIVER_ADDR=" + receiver, "PHP_CLI_SERVER_WORKERS=4"})
	phptest.Run(t, app, env, "php", "setup.php")
	out := phptest.Start(t, app, env, "php", "-S", receiver, "-t", "public", "public/index.php")
	phptest.WaitListening(t, receiver, out)

	committed := 0
	for _, line := range strings.Split(strings.TrimSpace(phptest.Run(t, app, env, "php", "enqueue.php", "1", fmt.Sprint(orders))), "\n") {
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
	var n, delayed int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE type = 'messenger' AND queue = 'orders'`).Scan(&n))
	require.Equal(t, committed, n, "a job per committed order, none for a rolled-back one")
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE next_run_at >= created_at + interval '1900 milliseconds'`).Scan(&delayed))
	require.Equal(t, 5, delayed, "DelayStamp sets the run time: orders 4, 8, 12, 16, 20")

	phptest.Run(t, app, env, "php", "dispatch.php", "999") // no such order
	phptest.Start(t, app, env, bin, "--config", "sluice.yaml", "work")
	testdb.WaitFor(t, 60*time.Second, "every job finishes", func() bool {
		var open int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM `+jobs+` WHERE status NOT IN ('success', 'failed', 'cancelled')`).Scan(&open))
		return open == 0
	})
	var ok, retried int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FILTER (WHERE status = 'success'), COUNT(*) FILTER (WHERE attempts = 2) FROM `+jobs).Scan(&ok, &retried))
	require.Equal(t, committed, ok)
	var status, lastError string
	var attempts int
	require.NoError(t, db.QueryRow(`SELECT status, attempts, last_error FROM `+jobs+` WHERE status <> 'success'`).Scan(&status, &attempts, &lastError))
	require.Equal(t, "failed", status)
	require.Equal(t, 1, attempts, "UnrecoverableMessageHandlingException fails the job at once")
	require.Contains(t, lastError, "order 999 does not exist")
	require.Equal(t, 4, retried, "orders 1, 6, 11, 16: busy on their first attempt")
	var synced, wrong int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COUNT(*) FILTER (WHERE sync_count <> 1 OR status <> 'synced') FROM `+tg.Prefix+`orders`).Scan(&synced, &wrong))
	require.Equal(t, committed, synced)
	require.Zero(t, wrong, "each order synced exactly once")
	// NotifyOrderHandler runs before SyncOrderHandler: a busy order's retry
	// carries its HandledStamp (written into the job's next attempt, which
	// sluice reads), so no customer is notified twice; order 999's notice
	// stands, as under Symfony's worker, where a handler that succeeded is
	// not undone by another's failure.
	var notices, notified int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT order_id) FROM `+tg.Prefix+`notices`).Scan(&notices, &notified))
	require.Equal(t, committed+1, notified, "every committed order and order 999 notified")
	require.Equal(t, notified, notices, "no order notified twice")
}

// gadget is a class of the app whose __wakeup and __destruct write a
// marker file: the stand-in for the gadget chains an app's dependencies
// hold (Monolog's runs a command), reached by unserialize() alone.
const gadget = `<?php
namespace App;
final class Gadget
{
    public string $file = '';
    public function __wakeup(): void { file_put_contents($this->file, "wakeup\n", FILE_APPEND); }
    public function __destruct() { if ($this->file !== '') { file_put_contents($this->file, "destruct\n", FILE_APPEND); } }
}
`

// TestMessengerRefusesForgedEnvelopes enqueues, through sluice's HTTP API
// with a valid token, payloads that a token holder could write: a
// serialized App\Gadget with no signature, and one with a made-up
// signature. A real `sluice serve` delivers them to the webhook route,
// which must decode neither: the marker stays absent and each job fails at
// once, its last_error naming payload.signature.
func TestMessengerRefusesForgedEnvelopes(t *testing.T) {
	phptest.Require(t, "pdo_pgsql", "curl")
	phptest.RequireFile(t, "/usr/share/php/Symfony/Component/Messenger/autoload.php", "php-symfony-messenger")
	d, tg := testdb.OpenURL(t, "postgres")
	app := phptest.InstallApp(t, ".")
	require.NoError(t, os.WriteFile(filepath.Join(app, "src", "Gadget.php"), []byte(gadget), 0o644))
	cfg, err := os.ReadFile(filepath.Join(app, "sluice.yaml"))
	require.NoError(t, err)
	cfg = append(cfg, "listen: \"${SLUICE_LISTEN}\"\nauth: { tokens: [\"${SLUICE_TOKEN}\"] }\n"...)
	require.NoError(t, os.WriteFile(filepath.Join(app, "sluice.yaml"), cfg, 0o644))
	receiver, listen := testdb.FreeAddr(t), testdb.FreeAddr(t)
	dsn, user, pass := phptest.DSN(t, tg.URL)
	env := proctest.Env([]string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "APP_PREFIX=" + tg.Prefix,
		"APP_DSN=" + dsn, "APP_DB_USER=" + user, "APP_DB_PASSWORD=" + pass, "SLUICE_LISTEN=" + listen, "SLUICE_TOKEN=forge-token-Yc7Mb3Rk9Gt5Pq2W",
		"HOOK_SECRET=symfony-secret", "APP_SECRET=symfony-app-secret", "RECEIVER_ADDR=" + receiver})
	phptest.Run(t, app, env, "php", "setup.php")
	out := phptest.Start(t, app, env, "php", "-S", receiver, "-t", "public", "public/index.php")
	phptest.WaitListening(t, receiver, out)
	srv := phptest.Start(t, app, env, bin, "--config", "sluice.yaml", "serve")
	phptest.WaitListening(t, listen, srv)

	marker := filepath.Join(t.TempDir(), "pwned")
	// PhpSerializer decodes stripslashes(body): the class name's backslash is doubled.
	body := fmt.Sprintf(`O:10:"App\\Gadget":1:{s:4:"file";s:%d:"%s";}`, len(marker), marker)
	forged := map[string]map[string]any{
		"unsigned":       {"body": body},
		"made-up secret": {"body": body, "signature": "v1=" + strings.Repeat("ab", 32)},
	}
	ids := map[string]int64{}
	for name, payload := range forged {
		b, err := json.Marshal(map[string]any{"type": "messenger", "payload": payload})
		require.NoError(t, err)
		req, err := http.NewRequest("POST", "http://"+listen+"/v1/jobs", bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer forge-token-Yc7Mb3Rk9Gt5Pq2W")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var r struct{ ID int64 }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, name)
		ids[name] = r.ID
	}
	db := d.DB()
	jobs := tg.Prefix + "jobs"
	want := map[string]string{"unsigned": "payload.signature: missing", "made-up secret": "payload.signature: mismatch"}
	for name, id := range ids {
		testdb.WaitFor(t, 60*time.Second, name+" job finishes", func() bool {
			var status string
			require.NoError(t, db.QueryRow(`SELECT status FROM `+jobs+` WHERE id = $1`, id).Scan(&status))
			return status == "failed" || status == "success"
		})
	}
	_, err = os.Stat(marker)
	require.True(t, os.IsNotExist(err), "the gadget ran in the app: %s exists", marker)
	for name, id := range ids {
		var status, lastError string
		var attempts int
		require.NoError(t, db.QueryRow(`SELECT status, attempts, COALESCE(last_error, '') FROM `+jobs+` WHERE id = $1`, id).Scan(&status, &attempts, &lastError))
		require.Equal(t, "failed", status, name)
		require.Equal(t, 1, attempts, "%s: refused at once, not retried", name)
		require.Contains(t, lastError, want[name], name)
	}
}
