// Package phptest runs the PHP client's tests and examples from Go tests,
// beside the real sluice binary and databases: it finds php and its
// extensions, and turns sluice's database URLs into PDO DSNs.
package phptest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
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

// Debian13Root is the Debian 13 chroot (PHP 8.4, Illuminate 10.48,
// Messenger 6.4, PHPUnit 11) that SLUICE_TEST_LARAVEL10_ROOT names and
// .ci/php.sh builds; without it the test skips, or fails under
// SLUICE_TEST_REQUIRE_ALL=1. Tests chroot into it as root; it shares the
// host's network.
func Debian13Root(t testing.TB) string {
	t.Helper()
	root := os.Getenv("SLUICE_TEST_LARAVEL10_ROOT")
	if root == "" {
		if testdb.RequireAll() {
			t.Fatal("SLUICE_TEST_LARAVEL10_ROOT unset (SLUICE_TEST_REQUIRE_ALL=1: .ci/php.sh builds the chroot)")
		}
		t.Skip("SLUICE_TEST_LARAVEL10_ROOT unset: no Debian 13 chroot")
	}
	return root
}

// ClientDir is clients/php, where composer.json and the PHP tests are.
func ClientDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Start runs a long-lived process (php -S, sluice work) in its own process
// group in dir, stopped with SIGTERM to the group when the test ends (php -S
// forks its workers), and returns its output so far.
func Start(t testing.TB, dir string, env []string, name string, args ...string) *testdb.SyncBuffer {
	t.Helper()
	out := &testdb.SyncBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
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
			t.Logf("%s %s output:\n%s", name, strings.Join(args, " "), out)
		}
	})
	return out
}

// WaitListening waits until something accepts connections on addr. Two
// minutes: a loaded CI machine once took over 15 s to bring serve up (its
// migrations and first queries wait for the shared database); what is
// judged here is that it comes up, not how fast.
func WaitListening(t testing.TB, addr string, out *testdb.SyncBuffer) {
	t.Helper()
	const limit = 2 * time.Minute
	deadline := time.Now().Add(limit)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: not reached within %s: %s", addr, limit, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run runs a command to its end in dir and returns its stdout; a failure
// fails the test with stderr. From the test's goroutine only; others use Output.
func Run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := Output(dir, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Output runs a command to its end in dir and returns its stdout, or an
// error with its stderr.
func Output(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// Composer runs composer offline in dir, with a COMPOSER_HOME of the test's
// own so that no user cache or config takes part.
func Composer(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("composer"); err != nil {
		testdb.Unavailable(t, "php", "composer not found (apt-get install composer, or run .ci/php.sh)", err, nil)
	}
	env := append(os.Environ(), "COMPOSER_HOME="+t.TempDir(), "COMPOSER_NO_INTERACTION=1", "COMPOSER_DISABLE_NETWORK=1")
	return Run(t, dir, env, "composer", args...)
}

// InstallApp makes a throwaway app: a copy of the files of src (not its
// composer.json, composer.lock or vendor/) in a fresh directory, which then
// installs sluice/sluice with the commands of docs/php.md "Install", from a
// path repository and offline. The "autoload" section of src's
// composer.json, if any (Debian's framework autoloaders), is added as the
// guide says, followed by composer dump-autoload. It returns the app's
// directory.
func InstallApp(t testing.TB, src string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case e.IsDir() && e.Name() == "vendor":
			return filepath.SkipDir
		case e.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case rel == "composer.json" || rel == "composer.lock" || strings.HasSuffix(rel, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, rel), b, 0o644)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	Composer(t, dir, "init", "--name", "example/app")
	Composer(t, dir, "config", "repositories.sluice", fmt.Sprintf(`{"type": "path", "url": %q, "options": {"symlink": false}}`, ClientDir()))
	Composer(t, dir, "config", "repositories.packagist.org", "false")
	Composer(t, dir, "require", "sluice/sluice:@dev")
	var srcJSON struct {
		Autoload json.RawMessage `json:"autoload"`
	}
	if b, err := os.ReadFile(filepath.Join(src, "composer.json")); err == nil {
		if err := json.Unmarshal(b, &srcJSON); err != nil {
			t.Fatalf("%s/composer.json: %v", src, err)
		}
	}
	if srcJSON.Autoload != nil {
		path := filepath.Join(dir, "composer.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var app map[string]json.RawMessage
		if err := json.Unmarshal(b, &app); err != nil {
			t.Fatal(err)
		}
		app["autoload"] = srcJSON.Autoload
		b, _ = json.MarshalIndent(app, "", "    ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		Composer(t, dir, "dump-autoload")
	}
	return dir
}

// RequireFile skips (or fails in CI) unless path, which Debian's package
// pkg installs, exists.
func RequireFile(t testing.TB, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testdb.Unavailable(t, "php", pkg+" not installed (apt-get install "+pkg+", or run .ci/php.sh)", err, nil)
	}
}
