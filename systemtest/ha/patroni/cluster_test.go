// Package patroni runs real `sluice work` and `sluice serve` processes
// against PostgreSQL 15 with two streaming replicas under Patroni and
// etcd, kills the primary (Patroni and its postgres, so the cluster fails
// over instead of restarting it) while jobs are enqueued and worked, and
// checks from an execution log and the database what the failover cost:
// acknowledged enqueues lost, acknowledged successes that ran again, jobs
// lost, and the time from the kill to the first job finished on the new
// primary. It does so once with synchronous replication and once
// without, each time with replication stalled for the last moments
// before the kill, so that the asynchronous window is not empty.
//
// Every server here (etcd, three Patroni nodes with their postgres,
// HAProxy) is started by the test on free ports with its files under a
// temporary directory: the shared PostgreSQL on 5432, and any etcd that a
// package install started on 2379, are never used or touched.
package patroni

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the test's own connections to each node
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the real binary once: the failover is injected under
// processes that run exactly as a user runs them.
func TestMain(m *testing.M) {
	testdb.MainExclusive(m, "systemtest/ha/patroni", &bin)
}

const pgBin = "/usr/lib/postgresql/15/bin"

// Patroni's timing, at the smallest values its documentation allows
// (ttl >= 20, loop_wait >= 1, retry_timeout >= 3, and loop_wait +
// 2*retry_timeout <= ttl). A killed primary's leader key outlives it by
// up to ttl, so the failover takes about ttl: that, not sluice, sets the
// recovery time measured here.
const (
	patroniTTL          = 20
	patroniLoopWait     = 1
	patroniRetryTimeout = 3
)

// unavailable skips a test whose servers cannot be set up here, loudly,
// or fails it when SLUICE_TEST_REQUIRE_ALL=1 (CI).
func unavailable(t *testing.T, what string, err error, out []byte) {
	t.Helper()
	testdb.Unavailable(t, "Patroni", what, err, out)
}

// cluster is one Patroni cluster of three nodes on one etcd, with an
// HAProxy in front that routes to whichever node Patroni's REST API
// reports as primary.
type cluster struct {
	t       *testing.T
	dir     string
	scope   string
	etcd    *exec.Cmd
	nodes   []*node
	haPort  int
	uid     uint32
	gid     uint32
	haproxy *exec.Cmd
}

// node is one Patroni member and the postgres it manages.
type node struct {
	name    string
	dir     string
	pgPort  int
	apiPort int
	patroni *exec.Cmd
	dead    bool
}

func (n *node) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.pgPort, db)
}

// startCluster starts etcd, bootstraps the first node, then the two
// replicas from it, and HAProxy; it returns once the primary and both
// replicas are running. sync sets Patroni's synchronous_mode.
func startCluster(t *testing.T, sync bool) *cluster {
	t.Helper()
	for _, b := range []string{"patroni", "etcd", "haproxy"} {
		if _, err := exec.LookPath(b); err != nil {
			unavailable(t, b+" binary (apt-get install patroni etcd-server haproxy)", err, nil)
		}
	}
	if _, err := os.Stat(pgBin + "/initdb"); err != nil {
		unavailable(t, "PostgreSQL 15 binaries", err, nil)
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		unavailable(t, "user postgres", err, nil)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)

	// Under /tmp rather than t.TempDir: postgres must traverse every parent.
	dir, err := os.MkdirTemp("", "sluice-patroni")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	c := &cluster{t: t, dir: dir, scope: "sluice-" + filepath.Base(dir), uid: uint32(uid), gid: uint32(gid)}
	t.Cleanup(func() {
		c.stopAll()
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("Patroni logs (tails):\n%s\ncluster files kept in %s", c.logs(), dir)
		}
	})

	etcdClient, etcdPeer := testdb.FreePort(t), testdb.FreePort(t)
	c.etcd = c.spawn("etcd", filepath.Join(dir, "etcd.log"), false, "etcd", "--name", "e0", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdClient),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdClient),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPeer),
		"--initial-cluster", fmt.Sprintf("e0=http://127.0.0.1:%d", etcdPeer))

	for i := range 3 {
		n := &node{name: fmt.Sprintf("pg%d", i), dir: filepath.Join(dir, fmt.Sprintf("pg%d", i)), pgPort: testdb.FreePort(t), apiPort: testdb.FreePort(t)}
		require.NoError(t, os.Mkdir(n.dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(n.dir, "patroni.yml"), []byte(c.patroniConfig(n, etcdClient, sync)), 0o600))
		require.NoError(t, os.Chown(n.dir, uid, gid))
		require.NoError(t, os.Chown(filepath.Join(n.dir, "patroni.yml"), uid, gid))
		c.nodes = append(c.nodes, n)
	}
	// The first node bootstraps alone, so it is the one that runs initdb;
	// the others then copy it with pg_basebackup.
	c.startNode(c.nodes[0])
	c.waitRole(c.nodes[0], "primary", 120*time.Second)
	c.startNode(c.nodes[1])
	c.startNode(c.nodes[2])
	c.waitRole(c.nodes[1], "replica", 120*time.Second)
	c.waitRole(c.nodes[2], "replica", 120*time.Second)

	c.haPort = testdb.FreePort(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte(c.haproxyConfig()), 0o644))
	c.haproxy = c.spawn("haproxy", filepath.Join(dir, "haproxy.log"), false, "haproxy", "-db", "-f", cfg)
	c.waitHAProxyPrimary()
	return c
}

// waitHAProxyPrimary waits until HAProxy routes only to the primary.
// HAProxy starts with every server up and marks the replicas down only
// after two failed checks (a second): a client that connects before then
// may land on a replica (read-only) or have its session cut. Round-robin
// spreads consecutive connections over the servers it holds up, so six
// fresh ones in a row on a writable server mean the replicas are out.
func (c *cluster) waitHAProxyPrimary() {
	c.t.Helper()
	db, err := sql.Open("pgx", c.haproxyURL("postgres"))
	require.NoError(c.t, err)
	defer db.Close()
	db.SetMaxIdleConns(0) // each check a new connection, so a new pick
	testdb.WaitFor(c.t, 60*time.Second, "HAProxy routing to the primary only", func() bool {
		for range 6 {
			var recovery bool
			if err := db.QueryRow("SELECT pg_is_in_recovery()").Scan(&recovery); err != nil || recovery {
				return false
			}
		}
		return true
	})
}

// patroniConfig is one node's Patroni configuration: trust authentication
// on loopback only, small memory, and the fastest timing Patroni allows.
// fsync is off to spare the loaded test machine's disk: the fault here is
// a killed process, whose writes the kernel still holds, never a lost
// machine, so what each mode guarantees is unchanged.
func (c *cluster) patroniConfig(n *node, etcdPort int, sync bool) string {
	return fmt.Sprintf(`scope: %[1]s
namespace: /sluice-test/
name: %[2]s
log:
  level: INFO
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd3:
  hosts: 127.0.0.1:%[4]d
bootstrap:
  dcs:
    ttl: %[5]d
    loop_wait: %[6]d
    retry_timeout: %[7]d
    synchronous_mode: %[8]t
    postgresql:
      use_pg_rewind: false
      parameters:
        shared_buffers: 16MB
        max_connections: 300
        fsync: "off"
        max_wal_senders: 10
        max_replication_slots: 10
  initdb:
    - encoding: UTF8
    - auth: trust
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[9]d
  connect_address: 127.0.0.1:%[9]d
  data_dir: %[10]s/data
  bin_dir: %[11]s
  pgpass: %[10]s/pgpass
  authentication:
    superuser: {username: postgres, password: unused}
    replication: {username: replicator, password: unused}
  parameters:
    unix_socket_directories: %[10]s
`, c.scope, n.name, n.apiPort, etcdPort, patroniTTL, patroniLoopWait, patroniRetryTimeout, sync, n.pgPort, n.dir, pgBin)
}

// haproxyConfig routes one port to the node whose Patroni answers 200 on
// /primary, checked every 500 ms; a node marked down has its sessions cut
// so that no client stays on a demoted primary.
func (c *cluster) haproxyConfig() string {
	var servers strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&servers, "  server %s 127.0.0.1:%d check port %d\n", n.name, n.pgPort, n.apiPort)
	}
	return fmt.Sprintf(`global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 2s
listen postgres_primary
  bind 127.0.0.1:%d
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
%s`, c.haPort, servers.String())
}

// spawn starts a server process with its output in logPath, as the
// postgres user when asPostgres, in a process group of its own.
func (c *cluster) spawn(what, logPath string, asPostgres bool, name string, args ...string) *exec.Cmd {
	c.t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(c.t, err)
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if asPostgres {
		require.NoError(c.t, os.Chown(logPath, int(c.uid), int(c.gid)))
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.uid, Gid: c.gid}
		cmd.Dir = filepath.Dir(logPath)
		cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(logPath))
	}
	if err := cmd.Start(); err != nil {
		unavailable(c.t, what, err, nil)
	}
	go cmd.Wait() // reap it whenever it exits
	return cmd
}

func (c *cluster) startNode(n *node) {
	n.patroni = c.spawn("patroni "+n.name, filepath.Join(n.dir, "patroni.log"), true, "patroni", filepath.Join(n.dir, "patroni.yml"))
}

// role asks a node's Patroni REST API whether it is "primary" or
// "replica" (a running, streaming one): 200 means yes.
func (c *cluster) role(n *node, role string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/%s", n.apiPort, role), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *cluster) waitRole(n *node, role string, limit time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for !c.role(n, role) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(n.dir, "patroni.log"))
			unavailable(c.t, fmt.Sprintf("%s did not become %s within %s", n.name, role, limit), nil, []byte(proctest.Tail(string(log), 3000)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// primary returns the live node whose Patroni reports it primary, or nil.
func (c *cluster) primary() *node {
	for _, n := range c.nodes {
		if !n.dead && c.role(n, "primary") {
			return n
		}
	}
	return nil
}

// live returns the nodes not killed.
func (c *cluster) live() []*node {
	var out []*node
	for _, n := range c.nodes {
		if !n.dead {
			out = append(out, n)
		}
	}
	return out
}

// multiHostURL names every node; target_session_attrs=read-write makes
// the client try them in turn and keep the first that accepts writes.
func (c *cluster) multiHostURL(db string) string {
	var hosts []string
	for _, n := range c.nodes {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", n.pgPort))
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), db)
}

func (c *cluster) haproxyURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.haPort, db)
}

// kill SIGKILLs a node's Patroni and its postgres: the postmaster and
// every child of it, as a crashed machine would leave them. Patroni goes
// first, so that nothing restarts postgres on the spot: the node stays
// down and the cluster must fail over. Postgres children each run in a
// session of their own, so they are found by parent, from /proc, which
// is slow on a loaded machine: they are all frozen (SIGSTOP) at once
// when found, the postmaster with them so that it forks no new one, then
// listed again to catch a child forked during the first listing, and
// killed. It returns the moment after which the node wrote nothing: when
// they were frozen, or, if the second listing found a child the first
// missed (which ran meanwhile), when they were killed.
func (c *cluster) kill(n *node) time.Time {
	c.t.Helper()
	syscall.Kill(-n.patroni.Process.Pid, syscall.SIGKILL)
	at := time.Now()
	if b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid")); err == nil {
		first, _, _ := strings.Cut(string(b), "\n")
		if pm, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && pm > 0 {
			kids := children(pm)
			syscall.Kill(pm, syscall.SIGSTOP)
			for _, k := range kids {
				syscall.Kill(k, syscall.SIGSTOP)
			}
			at = time.Now()
			late := false
			for _, k := range children(pm) {
				late = late || !slices.Contains(kids, k)
				kids = append(kids, k)
			}
			for _, k := range kids {
				syscall.Kill(k, syscall.SIGKILL)
			}
			syscall.Kill(pm, syscall.SIGKILL)
			if late {
				at = time.Now()
			}
		}
	}
	n.dead = true
	return at
}

// stallReplication freezes (SIGSTOP) the primary's WAL senders: from
// then on no standby receives what the primary writes. (Freezing a
// standby's receiver instead would not do: the kernel's socket buffers
// would keep what the primary sent, and the receiver would write it all
// once thawed.) With synchronous replication, commits then wait,
// unacknowledged; without it, they are acknowledged and exist on the
// primary alone. The senders die with the primary.
func (c *cluster) stallReplication(primary *node) {
	c.t.Helper()
	rows, err := c.open(primary, "postgres").Query("SELECT pid FROM pg_stat_replication")
	require.NoError(c.t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var pid int
		require.NoError(c.t, rows.Scan(&pid))
		require.NoError(c.t, syscall.Kill(pid, syscall.SIGSTOP))
		n++
	}
	require.NoError(c.t, rows.Err())
	require.NotZero(c.t, n, "a WAL sender to stall")
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func (c *cluster) stopAll() {
	for _, n := range c.nodes {
		if !n.dead && n.patroni != nil {
			c.kill(n)
		}
	}
	for _, p := range []*exec.Cmd{c.haproxy, c.etcd} {
		if p != nil && p.Process != nil {
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		}
	}
}

// patchConfig changes Patroni's dynamic configuration through a node's
// REST API.
func (c *cluster) patchConfig(n *node, cfg map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(cfg)
	req, _ := http.NewRequest("PATCH", fmt.Sprintf("http://127.0.0.1:%d/config", n.apiPort), bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "PATCH /config")
}

// open is the test's own connection pool to one node.
func (c *cluster) open(n *node, db string) *sql.DB {
	d, err := sql.Open("pgx", n.dsn(db))
	require.NoError(c.t, err)
	c.t.Cleanup(func() { d.Close() })
	return d
}

// logs returns the tail of every node's Patroni log, for a failure.
func (c *cluster) logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		log, _ := os.ReadFile(filepath.Join(n.dir, "patroni.log"))
		fmt.Fprintf(&b, "--- %s (dead=%t) ---\n%s\n", n.name, n.dead, proctest.Tail(string(log), 2000))
	}
	return b.String()
}
