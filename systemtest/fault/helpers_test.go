// Package fault injects faults around real `sluice work` processes
// (database restarts, killed connections, locks, hanging webhooks, a full
// disk, shutdown under load) and checks, from an execution log and the
// jobs table, that no job is lost and that only jobs in flight at the
// fault ran twice.
//
// Faults that touch a MariaDB or PostgreSQL server run on a throwaway
// instance on a free port, one per kind shared by this package's tests:
// the shared test servers are used by other packages in parallel and must
// never be restarted or have their connections killed.
package fault

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the admin connection to a throwaway MariaDB
	_ "github.com/jackc/pgx/v5/stdlib" // the admin connection to a throwaway PostgreSQL
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the real binary once: every fault is injected around
// processes that run exactly as a user runs them.
func TestMain(m *testing.M) {
	testdb.MainExclusive(m, "systemtest/fault", &bin, stopServers)
}

// unavailable skips a fault whose environment (a throwaway server, a
// tmpfs mount) cannot be set up here, loudly, or fails it in CI.
func unavailable(t *testing.T, what string, err error, out []byte) {
	t.Helper()
	testdb.Unavailable(t, "fault", what, err, out)
}

// server is a throwaway database instance, shared by the tests that need
// one of its kind (see throwaway).
type server struct {
	kind   string // "mysql" or "postgres"
	dir    string
	port   int
	url    string // sluice URL of the test database
	admin  string // database/sql DSN for the test's own admin connection
	prefix string // sluice's table prefix, set by target
	proc   *exec.Cmd
	up     bool // it has accepted connections once: failing to start again is the test's failure
}

const dbName = "sluice_fault"

// servers holds the throwaway instances, one per kind: the first test
// that needs one starts it, the later ones reuse it (each under a table
// prefix of its own, set by target), and TestMain stops them after the
// tests. Setting an instance up costs seconds of CPU; the tests run one
// at a time, so none sees another's fault.
var (
	servers  = map[string]*server{}
	teardown []func() // run by stopServers, last first
)

// throwaway returns the shared instance of kind, started now if no test
// started it yet, or again if an earlier test failed while it was down.
func throwaway(t *testing.T, kind string) *server {
	t.Helper()
	s := servers[kind]
	if s == nil {
		if kind == "postgres" {
			s = startPostgres(t)
		} else {
			s = startMariaDB(t)
		}
		servers[kind] = s
		return s
	}
	if err := s.ping(); err != nil {
		t.Logf("the shared %s was down after an earlier test (%v): starting it again", kind, err)
		s.start(t)
	}
	return s
}

// ping opens one connection to the instance's test database.
func (s *server) ping() error {
	db, err := sql.Open(s.driverName(), s.admin)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// driverName is the database/sql driver of the test's own connections.
func (s *server) driverName() string {
	if s.kind == "mysql" {
		return "mysql"
	}
	return "pgx"
}

func stopServers() {
	for i := len(teardown) - 1; i >= 0; i-- {
		teardown[i]()
	}
}

// serverDir makes a data directory under /tmp owned by the server's user:
// t.TempDir's parents are not traversable by postgres or mysql.
func serverDir(t *testing.T, owner string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-fault-"+owner)
	require.NoError(t, err)
	teardown = append(teardown, func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	if out, err := exec.Command("chown", owner+":"+owner, dir).CombinedOutput(); err != nil {
		unavailable(t, "chown "+dir, err, out)
	}
	return dir
}

// heldPort is a port held until TestMain ends (testdb.HoldPort): an
// instance is stopped and started again on it, and no one else may take
// it while the instance is down.
func heldPort(t *testing.T) int {
	t.Helper()
	port, release, err := testdb.HoldPort()
	require.NoError(t, err)
	teardown = append(teardown, release)
	return port
}

func startPostgres(t *testing.T) *server {
	t.Helper()
	bindir := "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(bindir + "/initdb"); err != nil {
		unavailable(t, "PostgreSQL 15 binaries", err, nil)
	}
	s := &server{kind: "postgres", dir: serverDir(t, "postgres"), port: heldPort(t)}
	data := s.dir + "/data"
	out, err := exec.Command("runuser", "-u", "postgres", "--", bindir+"/initdb", "-D", data, "-A", "trust", "-U", "postgres").CombinedOutput()
	if err != nil {
		unavailable(t, "initdb", err, out)
	}
	s.start(t)
	teardown = append(teardown, func() { s.pgctl("stop", "-m", "immediate") })
	createDB(t, "pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port))
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, dbName)
	s.admin = s.url
	return s
}

func (s *server) pgctl(args ...string) ([]byte, error) {
	full := append([]string{"-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl", "-D", s.dir + "/data"}, args...)
	return exec.Command("runuser", full...).CombinedOutput()
}

func startMariaDB(t *testing.T) *server {
	t.Helper()
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err2 := os.Stat("/usr/sbin/mariadbd"); err2 != nil {
			unavailable(t, "mariadbd binary", err, nil)
		}
	}
	s := &server{kind: "mysql", dir: serverDir(t, "mysql"), port: heldPort(t)}
	// A private tmpdir: at start-up mariadbd deletes every #sql* file in
	// its tmpdir, which in /tmp would include the shared server's
	// temporary tables and break other tests running at the same time.
	require.NoError(t, os.Mkdir(s.dir+"/tmp", 0o755))
	require.NoError(t, exec.Command("chown", "mysql:mysql", s.dir+"/tmp").Run())
	install := exec.Command("mariadb-install-db", "--datadir="+s.dir+"/data", "--user=mysql",
		"--auth-root-authentication-method=normal", "--skip-test-db", "--tmpdir="+s.dir+"/tmp")
	install.Env = append(os.Environ(), "TMPDIR="+s.dir+"/tmp")
	out, err := install.CombinedOutput()
	if err != nil {
		unavailable(t, "mariadb-install-db", err, out)
	}
	s.start(t)
	teardown = append(teardown, func() {
		if s.proc != nil {
			s.proc.Process.Kill()
			s.proc.Wait()
		}
	})
	createDB(t, "mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	s.url = fmt.Sprintf("mysql://root@127.0.0.1:%d/%s", s.port, dbName)
	s.admin = fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, dbName)
	return s
}

// createDB creates the test database through an admin connection to dsn.
func createDB(t *testing.T, drv, dsn string) {
	t.Helper()
	db, err := sql.Open(drv, dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE " + dbName)
	require.NoError(t, err)
}

// start (re)starts the instance on the same data directory and port. An
// instance that cannot start the first time makes its faults unavailable
// here; one that was up and does not come back mid-fault fails the test.
func (s *server) start(t *testing.T) {
	t.Helper()
	cannot := func(what string, err error, out []byte) {
		t.Helper()
		if s.up {
			t.Fatalf("%s did not come back on port %d: %s: %v\n%s", s.kind, s.port, what, err, out)
		}
		unavailable(t, what, err, out)
	}
	switch s.kind {
	case "postgres":
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", s.port, s.dir)
		out, err := s.pgctl("-o", opts, "-l", s.dir+"/log", "-w", "start")
		if err != nil {
			log, _ := os.ReadFile(s.dir + "/log")
			cannot("pg_ctl start", err, append(out, log...))
		}
	case "mysql":
		cmd := exec.Command("/usr/sbin/mariadbd", "--no-defaults", "--datadir="+s.dir+"/data", fmt.Sprintf("--port=%d", s.port),
			"--socket="+s.dir+"/sock", "--bind-address=127.0.0.1", "--user=mysql", "--innodb-flush-log-at-trx-commit=2",
			"--skip-log-bin", "--innodb-buffer-pool-size=64M", "--max-connections=300", "--pid-file="+s.dir+"/pid",
			"--tmpdir="+s.dir+"/tmp")
		cmd.Env = append(os.Environ(), "TMPDIR="+s.dir+"/tmp")
		var errb testdb.SyncBuffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			cannot("mariadbd", err, nil)
		}
		s.proc = cmd
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := exec.Command("mysqladmin", "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "ping").CombinedOutput()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				cannot("mariadbd did not answer within 60 s", err, append(out, errb.String()...))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	s.up = true
}

// startWatched is start, and returns when the server accepted a
// connection again: the start of the first ping that got through, made
// every 10 ms from a client of its own while the server starts.
func (s *server) startWatched(t *testing.T) time.Time {
	db, err := sql.Open(s.driverName(), s.admin)
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxIdleConns(0) // every ping is a new connection
	back := make(chan time.Time, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := db.PingContext(ctx)
			cancel()
			if err == nil {
				back <- began
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	s.start(t)
	select {
	case at := <-back:
		return at
	case <-time.After(10 * time.Second):
		t.Fatalf("%s started but refused connections for 10 s", s.kind)
		return time.Time{}
	}
}

// stop stops the instance: cleanly, or as a crash (SIGKILL / immediate).
func (s *server) stop(t *testing.T, crash bool) {
	t.Helper()
	switch s.kind {
	case "postgres":
		mode := "fast"
		if crash {
			mode = "immediate"
		}
		out, err := s.pgctl("-m", mode, "-w", "stop")
		require.NoError(t, err, "pg_ctl stop: %s", out)
	case "mysql":
		if crash {
			s.proc.Process.Signal(syscall.SIGKILL)
		} else {
			out, err := exec.Command("mysqladmin", "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "shutdown").CombinedOutput()
			require.NoError(t, err, "mysqladmin shutdown: %s", out)
		}
		s.proc.Wait()
		s.proc = nil
	}
}

// adminDB opens the test's own connection to the instance, outside sluice.
func (s *server) adminDB(t *testing.T) *sql.DB {
	db, err := sql.Open(s.driverName(), s.admin)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// target migrates sluice's tables on the instance and returns a driver on
// them, and the environment that gives a sluice process its table prefix.
func (s *server) target(t *testing.T) (driver.Driver, []string) {
	prefix := testdb.Prefix()
	s.prefix = prefix
	env := []string{"SLUICE_PREFIX=" + prefix}
	r := proctest.Run(t, bin, env, "migrate", "--config", dbConfig(t, s.url, ""))
	require.Equal(t, 0, r.Code, r.Stderr)
	d, err := dburl.Open(s.url, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, env
}

// dbConfig is proctest.Config: every sluice process here finds its
// database by the config file's db:, as users run it.
func dbConfig(t *testing.T, url, body string) string {
	t.Helper()
	return proctest.Config(t, url, body)
}

// proc is a running `sluice work`.
type proc struct{ *proctest.Proc }

func startWork(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return &proc{proctest.Start(t, bin, "sluice work", env, append([]string{"work"}, args...)...)}
}

// term sends SIGTERM and waits for the exit, returning the error and how long it took.
func (p *proc) term(t *testing.T, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	err := p.Term(t, limit)
	return time.Since(start), err
}

// writeConfig writes a config on the database at url with a "work"
// command type built by proctest.LogScript, and returns it and the
// execution log's path.
func writeConfig(t *testing.T, url string, concurrency int, sleep string, typeExtra string, extra string) (cfgPath, logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "exec.log")
	return proctest.WorkConfig(t, url, concurrency, proctest.LogScript(logPath, "SLUICE_JOB_ID", sleep), typeExtra, extra), logPath
}

// allDone is proctest.AllDone.
func allDone(d driver.Driver) bool { return proctest.AllDone(d) }
