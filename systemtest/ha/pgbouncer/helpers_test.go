// Package pgbouncer runs sluice through PgBouncer in transaction pooling
// mode, the most common PostgreSQL pooler: the driver conformance suite,
// the lease lock backend, and real `sluice migrate`, `work`, `serve`,
// `run`, `enqueue` and `bench` processes configured as users configure
// them (db: with ?pooler=transaction, listen_db: a direct URL).
//
// Each test starts a throwaway pgbouncer of its own on a free port, with
// its config and auth file in a temporary directory, in front of the shared
// PostgreSQL (SLUICE_TEST_POSTGRES, database sluice_test); tables are kept
// apart by a fresh prefix, and the shared server's configuration is never
// touched. Without a pgbouncer binary or the server the tests skip loudly,
// or fail when SLUICE_TEST_REQUIRE_ALL=1.
package pgbouncer_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the real binary once, for the process tests.
func TestMain(m *testing.M) {
	testdb.MainExclusive(m, "systemtest/ha/pgbouncer", &bin)
}

// unavailable skips t loudly, or fails it in CI, when pgbouncer or the
// server is missing.
func unavailable(t *testing.T, msg string) {
	t.Helper()
	testdb.Unavailable(t, "PgBouncer", msg, nil, nil)
}

// bouncer is a throwaway pgbouncer in front of the shared server.
type bouncer struct {
	direct string // the server's URL, as the tests were given it
	pooled string // the same database through pgbouncer, with ?pooler=transaction
	admin  string // pgbouncer's admin console
	logs   *testdb.SyncBuffer
	done   chan struct{} // closed when pgbouncer exits
}

// requireAlive fails t if pgbouncer has exited or logged a fatal error.
func (b *bouncer) requireAlive(t *testing.T) {
	t.Helper()
	select {
	case <-b.done:
		t.Fatalf("pgbouncer exited:\n%s", proctest.Tail(b.logs.String(), 2000))
	default:
	}
	require.NotContains(t, b.logs.String(), "FATAL")
}

// poolSize is pgbouncer's server connections for the test database, fewer
// than one sluice process alone opens (32), so that clients really share.
const poolSize = 8

func startBouncer(t *testing.T) *bouncer {
	t.Helper()
	exe, err := exec.LookPath("pgbouncer")
	if err != nil {
		exe, err = exec.LookPath("/usr/sbin/pgbouncer")
	}
	if err != nil {
		unavailable(t, "no pgbouncer binary (apt-get install pgbouncer)")
	}
	direct := testdb.URL("postgres", "")
	cfg, err := pgx.ParseConfig(direct)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if c, err := pgx.ConnectConfig(ctx, cfg); err != nil {
		unavailable(t, fmt.Sprintf("postgres server unreachable at %s: %v", dburl.Redact(direct), err))
	} else {
		c.Close(ctx)
	}

	// pgbouncer refuses to run as root; it then runs as postgres, which
	// must be able to read its directory.
	dir, err := os.MkdirTemp("", "sluice-pgbouncer")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	var args []string
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			unavailable(t, "running as root and no postgres user for pgbouncer to run as")
		}
		args = append(args, "-u", "postgres")
	}
	_, port, _ := net.SplitHostPort(testdb.FreeAddr(t))
	authType := "trust"
	if cfg.Password != "" {
		authType = "plain" // the client's password is then also the server login's
	}
	ini := fmt.Sprintf(`[databases]
%[1]s = host=%[2]s port=%[3]d dbname=%[1]s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %[4]s
unix_socket_dir =
auth_type = %[5]s
auth_file = %[6]s/userlist.txt
admin_users = %[7]s
pool_mode = transaction
default_pool_size = %[8]d
max_client_conn = 1000
log_connections = 0
log_disconnections = 0
`, cfg.Database, cfg.Host, cfg.Port, port, authType, dir, cfg.User, poolSize)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(fmt.Sprintf("%q %q\n", cfg.User, cfg.Password)), 0o644))

	b := &bouncer{direct: direct, logs: &testdb.SyncBuffer{}}
	cmd := exec.Command(exe, append(args, filepath.Join(dir, "pgbouncer.ini"))...)
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	b.done = done
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("pgbouncer log (tail):\n%s", proctest.Tail(b.logs.String(), 3000))
		}
	})

	userinfo := url.User(cfg.User)
	if cfg.Password != "" {
		userinfo = url.UserPassword(cfg.User, cfg.Password)
	}
	u := url.URL{Scheme: "postgres", User: userinfo, Host: "127.0.0.1:" + port, Path: "/" + cfg.Database}
	b.pooled = u.String() + "?pooler=transaction"
	u.Path = "/pgbouncer"
	b.admin = u.String() + "?default_query_exec_mode=simple_protocol"
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("pgbouncer exited: %s", b.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer listening: not reached within a minute: %s", b.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b
}

// transactions is pgbouncer's count of transactions it pooled for the
// test database (SHOW STATS on the admin console).
func (b *bouncer) transactions(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, b.admin)
	require.NoError(t, err)
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SHOW STATS")
	require.NoError(t, err)
	defer rows.Close()
	db := filepath.Base(strings.SplitN(strings.TrimPrefix(b.pooled, "postgres://"), "?", 2)[0])
	var total int64
	for rows.Next() {
		// The simple protocol returns every column as text.
		vals := rows.RawValues()
		for i, f := range rows.FieldDescriptions() {
			if f.Name == "database" && string(vals[i]) != db {
				break
			}
			if f.Name == "total_xact_count" {
				n, err := strconv.ParseInt(string(vals[i]), 10, 64)
				require.NoError(t, err)
				total += n
			}
		}
	}
	require.NoError(t, rows.Err())
	return total
}

// openMigrated opens url under a fresh prefix, migrated through url, and
// drops the tables through the direct URL when t ends.
func (b *bouncer) openMigrated(t *testing.T, u string) (driver.Driver, string) {
	t.Helper()
	prefix := testdb.Prefix()
	d, err := dburl.Open(u, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = d.Migrate(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		d.Close()
		b.drop(prefix)
	})
	return d, prefix
}

// drop removes a prefix's tables through the direct URL.
func (b *bouncer) drop(prefix string) {
	d, err := dburl.Open(b.direct, dburl.Options{Prefix: prefix})
	if err != nil {
		return
	}
	defer d.Close()
	testdb.Drop(d, prefix)
}

func startSluice(t *testing.T, env []string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, bin, fmt.Sprint("sluice ", args), env, args...)
}

// runSluice runs a sluice command to its end and returns its stdout.
func runSluice(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	out, _ := runSluiceErr(t, env, stdin, args...)
	return out
}

// runSluiceErr is runSluice that also returns stderr.
func runSluiceErr(t *testing.T, env []string, stdin string, args ...string) (string, string) {
	t.Helper()
	cmd := proctest.Command(t, bin, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	r := proctest.RunCmd(t, cmd)
	require.Zero(t, r.Code, "sluice %s: %s", args, r.Stderr)
	return r.Stdout, r.Stderr
}

func withParam(u, param string) string {
	if strings.Contains(u, "?") {
		return u + "&" + param
	}
	return u + "?" + param
}
