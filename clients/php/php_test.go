// Package phpclient_test runs the PHP client's PHPUnit suite against each
// database, on tables that sluice's own migrations created.
package phpclient_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
)

func TestPHPUnit(t *testing.T) {
	phptest.Require(t, "pdo", "json", "hash", "curl")
	if _, err := exec.LookPath("phpunit"); err != nil {
		testdb.Unavailable(t, "php", "phpunit not found (apt-get install phpunit, or run .ci/php.sh)", err, nil)
	}
	testdb.ForEach(t, func(t *testing.T, name string) {
		phptest.Require(t, phptest.Extension(name))
		_, tg := testdb.OpenURL(t, name)
		cmd := exec.Command("phpunit", "-c", "phpunit.xml.dist")
		cmd.Dir = phptest.ClientDir()
		cmd.Env = proctest.Env(append(phptest.Env(t, tg.URL), "SLUICE_PREFIX="+tg.Prefix))
		out, err := cmd.CombinedOutput()
		if testing.Verbose() || err != nil {
			os.Stderr.Write(out)
		}
		require.NoError(t, err, "phpunit on %s", name)
	})
}
