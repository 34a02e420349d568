// Package symfony_test runs the Symfony Messenger example against Debian's
// php-symfony-messenger (5.4) on PostgreSQL: a throwaway app installs
// sluice/sluice with Composer, dispatches SyncOrder messages inside its
// order transactions (some rolled back, some delayed), and `sluice work`
// delivers them to the webhook controller under php -S, which hands them
// to the bus, with no messenger:consume.
package symfony_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
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
		"HOOK_SECRET=symfony-secret", "RECEIVER_ADDR=" + receiver, "PHP_CLI_SERVER_WORKERS=4"})
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
}
