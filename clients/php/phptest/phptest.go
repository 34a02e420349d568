// Package phptest runs the PHP client's tests and examples from Go tests,
// beside the real sluice binary and databases: it finds php and its
// extensions, and turns sluice's database URLs into PDO DSNs.
package phptest

import (
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testdb"
)

// Require skips (or fails in CI) unless php runs with every extension named.
func Require(t testing.TB, exts ...string) {
	t.Helper()
	if _, err := exec.LookPath("php"); err != nil {
		testdb.Unavailable(t, "php", "php not found (apt-get install php-cli, or run .ci/php.sh)", err, nil)
	}
	for _, e := range exts {
		if out, err := exec.Command("php", "-r", fmt.Sprintf(`exit(extension_loaded(%q) ? 0 : 1);`, e)).CombinedOutput(); err != nil {
			testdb.Unavailable(t, "php", "php extension "+e+" missing (run .ci/php.sh)", err, out)
		}
	}
}

// Extension returns the PDO extension for a testdb driver name.
func Extension(driver string) string {
	return map[string]string{"sqlite": "pdo_sqlite", "mysql": "pdo_mysql", "postgres": "pdo_pgsql"}[driver]
}

// Env gives PHP the database a test migrated: SLUICE_PHP_TEST_DSN, _USER and
// _PASSWORD, as the PHP tests read them.
func Env(t testing.TB, dbURL string) []string {
	t.Helper()
	dsn, user, pass := DSN(t, dbURL)
	return []string{"SLUICE_PHP_TEST_DSN=" + dsn, "SLUICE_PHP_TEST_USER=" + user, "SLUICE_PHP_TEST_PASSWORD=" + pass}
}

// DSN converts a sluice database URL to a PDO DSN, user and password.
func DSN(t testing.TB, dbURL string) (dsn, user, pass string) {
	t.Helper()
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		path, _, _ = strings.Cut(strings.TrimPrefix(path, "//"), "?")
		return "sqlite:" + path, "", ""
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("database URL %q: %v", dbURL, err)
	}
	scheme := map[string]string{"mysql": "mysql", "postgres": "pgsql", "postgresql": "pgsql"}[u.Scheme]
	if scheme == "" {
		t.Fatalf("database URL %q: no PDO driver for %s", dbURL, u.Scheme)
	}
	dsn = fmt.Sprintf("%s:host=%s;port=%s;dbname=%s", scheme, u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"))
	if scheme == "mysql" {
		dsn += ";charset=utf8mb4"
	}
	pass, _ = u.User.Password()
	return dsn, u.User.Username(), pass
}

// ClientDir is clients/php, where composer.json and the PHP tests are.
func ClientDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}
