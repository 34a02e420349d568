// Package phpclient_test runs the PHP client's PHPUnit suite against each
// database, on tables that sluice's own migrations created.
package phpclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

func TestPHPUnit(t *testing.T) {
	phptest.Require(t, "pdo", "json", "hash", "curl")
	if _, err := exec.LookPath("phpunit"); err != nil {
		testdb.Unavailable(t, "php", "phpunit not found (apt-get install phpunit, or run .ci/php.sh)", err, nil)
	}
	testdb.ForEach(t, func(t *testing.T, name string) {
		phptest.Require(t, phptest.Extension(name))
		_, tg := testdb.OpenURL(t, name)
		// A server on the same tables for ApiTest, without workers so that
		// its jobs stay where the test puts them.
		dir, listen := t.TempDir(), testdb.FreeAddr(t)
		cfg := "listen: " + listen + "\nauth: { tokens: [php-api-token-Rb5Kw9Xe3Nm7Tz2Q] }\ntypes:\n  api_job: { command: [\"true\"] }\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(cfg), 0o644))
		env := proctest.Env(append(phptest.Env(t, tg.URL), "SLUICE_PREFIX="+tg.Prefix, "SLUICE_DB="+tg.URL,
			"SLUICE_PHP_TEST_API=http://"+listen, "SLUICE_PHP_TEST_TOKEN=php-api-token-Rb5Kw9Xe3Nm7Tz2Q"))
		srv := phptest.Start(t, dir, env, bin, "--config", "sluice.yaml", "serve", "--no-workers")
		phptest.WaitListening(t, listen, srv)
		cmd := exec.Command("phpunit", "-c", "phpunit.xml.dist")
		cmd.Dir = phptest.ClientDir()
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if testing.Verbose() || err != nil {
			os.Stderr.Write(out)
		}
		require.NoError(t, err, "phpunit on %s", name)
	})
}
