package phpclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestPHPUnitOnDebian13 runs TestPHPUnit's suite on the next generation of
// the frameworks: Debian 13's PHP 8.4, PHPUnit 11, Symfony Messenger 6.4
// (SymfonyTest's differential cases against Symfony's own Worker) and
// Illuminate 10.48, in the chroot SLUICE_TEST_LARAVEL10_ROOT names
// (.ci/php.sh builds it with mmdebstrap; the chroot shares the host's
// network, so PHP in it reaches the test databases and the API server).
func TestPHPUnitOnDebian13(t *testing.T) {
	root := phptest.Debian13Root(t)
	inChroot := func(t *testing.T, env []string, script string) string {
		t.Helper()
		return phptest.Run(t, "/", nil, "chroot", append(append([]string{root, "env"}, env...), "sh", "-c", script)...)
	}
	require.Regexp(t, `^8\.4\.\d+ 6\.4\.`, inChroot(t, nil, `printf '%s %s' "$(php -r 'echo PHP_VERSION;')" "$(dpkg-query -W -f '${Version}' php-symfony-messenger)"`))

	// The client laid out as in the repository: its tests read
	// ../../testdata.
	src, err := os.MkdirTemp(filepath.Join(root, "tmp"), "sluice-php-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(src) })
	require.NoError(t, os.MkdirAll(filepath.Join(src, "clients"), 0o755))
	for from, to := range map[string]string{phptest.ClientDir(): "clients/php", filepath.Join(phptest.ClientDir(), "..", "..", "testdata"): "testdata"} {
		out, err := exec.Command("cp", "-r", from, filepath.Join(src, to)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	client := strings.TrimPrefix(src, filepath.Clean(root)) + "/clients/php"

	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			_, tg := testdb.OpenURL(t, name)
			dir, listen := t.TempDir(), testdb.FreeAddr(t)
			cfg := "listen: " + listen + "\nauth: { tokens: [php-api-token-Rb5Kw9Xe3Nm7Tz2Q] }\ntypes:\n  api_job: { command: [\"true\"] }\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(cfg), 0o644))
			env := append(phptest.Env(t, tg.URL), "SLUICE_PREFIX="+tg.Prefix,
				"SLUICE_PHP_TEST_API=http://"+listen, "SLUICE_PHP_TEST_TOKEN=php-api-token-Rb5Kw9Xe3Nm7Tz2Q")
			srv := phptest.Start(t, dir, proctest.Env(append(env, "SLUICE_DB="+tg.URL)), bin, "--config", "sluice.yaml", "serve", "--no-workers")
			phptest.WaitListening(t, listen, srv)
			out := inChroot(t, env, "cd "+client+" && phpunit -c phpunit.xml.dist --display-skipped")
			if testing.Verbose() {
				t.Log(out)
			}
			require.Contains(t, out, "PHPUnit 11.", "Debian 13's PHPUnit")
			// A skip would hide a missing framework (SymfonyTest skips
			// without Messenger) or API server; only a MySQL-only case
			// may skip, on PostgreSQL.
			if name == "postgres" {
				require.Contains(t, out, "Skipped: 1.", out)
				require.Contains(t, out, "PDO::MYSQL_ATTR_FOUND_ROWS is MySQL's", out)
			} else {
				require.NotContains(t, out, "Skipped", "no test may skip here:\n%s", out)
			}
		})
	}
}
