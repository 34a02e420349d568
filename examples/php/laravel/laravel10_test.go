package laravel_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestLaravelQueueOnLaravel10 runs the differential checks of
// TestLaravelQueueRunsJobsAsQueueWork and TestLaravelQueueScenarios (the
// same jobs on the sluice connection and on Laravel's database queue, the
// same outcome), the latter with the scenarios of the framework's 10.x
// tests, on Debian 13's Illuminate 10.48 and PHP 8.4, in a chroot built with
//
//	mmdebstrap --variant=apt --include=php8.4-cli,php8.4-mysql,php8.4-curl,php-laravel-framework,composer trixie DIR
//
// It runs when SLUICE_TEST_LARAVEL10_ROOT=DIR (as root, for chroot); the
// chroot shares the host's network, so PHP in it reaches the test database
// and `sluice work` on the host reaches php -S in it.
func TestLaravelQueueOnLaravel10(t *testing.T) {
	root := phptest.Debian13Root(t)
	d, tg := testdb.OpenURL(t, "mysql")
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	pass, _ := u.User.Password()

	// The client and this example, laid out as in the repository (the
	// example's composer.json finds the client at ../../../clients/php).
	src, err := os.MkdirTemp(filepath.Join(root, "tmp"), "sluice-laravel10-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(src) })
	inRoot := strings.TrimPrefix(src, filepath.Clean(root))
	for _, dir := range []string{"examples/php", "clients"} {
		require.NoError(t, os.MkdirAll(filepath.Join(src, dir), 0o755))
	}
	for from, to := range map[string]string{phptest.ClientDir(): "clients/php", ".": "examples/php/laravel"} {
		out, err := exec.Command("cp", "-r", from, filepath.Join(src, to)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	app := filepath.Join(src, "examples", "php", "laravel")
	os.RemoveAll(filepath.Join(app, "vendor"))
	receiver := testdb.FreeAddr(t)
	env := []string{"APP_PREFIX=" + tg.Prefix, "SLUICE_PREFIX=" + tg.Prefix, "DB_HOST=" + u.Hostname(), "DB_PORT=" + u.Port(),
		"DB_DATABASE=" + strings.TrimPrefix(u.Path, "/"), "DB_USERNAME=" + u.User.Username(), "DB_PASSWORD=" + pass,
		"APP_KEY=" + appKey, "HOOK_SECRET=laravel-secret", "PHP_CLI_SERVER_WORKERS=4",
		"COMPOSER_ALLOW_SUPERUSER=1", "COMPOSER_DISABLE_NETWORK=1", "COMPOSER_HOME=/tmp/composer-home"}
	chroot := func(extra ...string) []string {
		return append(append([]string{root, "env"}, append(env, extra...)...), "sh", "-c")
	}
	run := func(script string, extra ...string) string {
		t.Helper()
		return phptest.Run(t, "/", nil, "chroot", append(chroot(extra...), "cd "+inRoot+"/examples/php/laravel && "+script)...)
	}
	run("composer install -q")
	require.Regexp(t, `^8\.4\.\d+ 10\.48\.`, run(`php -r 'require "vendor/autoload.php"; echo PHP_VERSION, " ", Illuminate\Foundation\Application::VERSION;'`))
	run("php setup.php")
	out := phptest.Start(t, "/", nil, "chroot", append(chroot(), "cd "+inRoot+"/examples/php/laravel && exec php -S "+receiver+" -t public public/index.php")...)
	phptest.WaitListening(t, receiver, out)

	a := &laravelApp{db: d.DB(), prefix: tg.Prefix}
	work := func(config string) {
		phptest.Start(t, app, proctest.Env([]string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix,
			"HOOK_SECRET=laravel-secret", "RECEIVER_ADDR=" + receiver}), bin, "--config", config, "work")
	}
	run("php checks.php dispatch")
	work("sluice.yaml")
	testdb.WaitFor(t, 90*time.Second, "every job ends", func() bool {
		return a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE status NOT IN ('success', 'failed', 'cancelled')`) == 0
	})
	onSluice := a.outcome(t)
	require.NotEmpty(t, onSluice)

	for _, table := range []string{"log", "reported", "job_batches"} {
		_, err := a.db.Exec(`DELETE FROM ` + a.prefix + table)
		require.NoError(t, err)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(app, "storage", "cache")))
	run("php checks.php dispatch", "QUEUE_CONNECTION=database")
	require.JSONEq(t, `{"left":0}`, run("php checks.php work-database", "QUEUE_CONNECTION=database"))
	require.Equal(t, a.outcome(t), onSluice, "Illuminate 10: the sluice connection and Laravel's database queue, the same jobs")

	// The scenarios of laravel/framework's own tests (scenarios_test.go),
	// with the 10.x ones: on a second worker that serves their queues.
	runScenarios(t, a, func(t *testing.T, env []string, args ...string) string {
		return run("php "+strings.Join(args, " "), env...)
	}, func() { work("testdata/scenarios.yaml") }, app)
}
