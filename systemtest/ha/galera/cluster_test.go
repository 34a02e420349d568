// Package galera runs real `sluice` processes on a three-node MariaDB
// Galera cluster (multi-primary, synchronous replication) built from the
// Debian packages galera-4 and mariadb-server, optionally behind HAProxy,
// and checks from an execution log and the jobs table that sluice's
// promises hold across nodes: every job runs once, keys dedupe, schedule
// slots fire once, the run lock and fencing hold, and a node killed
// mid-run loses no job.
//
// The cluster is the package's own: its nodes listen on free ports with
// data directories under /tmp, and it never touches the shared server on
// 3306. One cluster serves every test (each test has its own table
// prefix); building it costs most of the package's run time.
package galera

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the test's own connections to the nodes
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the real binary once and stops the shared cluster after
// the tests. The cluster forms while the binary builds: joining nodes by
// state transfer takes a minute or more on a loaded machine.
func TestMain(m *testing.M) {
	testdb.Exclusive("systemtest/ha/galera")
	if installed() == nil {
		go func() {
			start := time.Now()
			shared.startErr, shared.startOut = shared.build()
			fmt.Fprintf(os.Stderr, "galera: 3-node cluster formed in %s (err: %v)\n", time.Since(start).Round(time.Millisecond), shared.startErr)
			close(shared.built)
		}()
	}
	testdb.MainWithBinary(m, &bin, func() {
		if installed() == nil {
			<-shared.built
			shared.stop()
		}
	})
}

// installed checks that the Galera provider and MariaDB server are here.
func installed() error {
	for _, f := range []string{provider, mariadbd} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w (apt-get install galera-4 mariadb-server rsync)", err)
		}
	}
	return nil
}

const (
	provider = "/usr/lib/galera/libgalera_smm.so"
	mariadbd = "/usr/sbin/mariadbd"
	dbName   = "sluice_galera"
)

// unavailable skips a test whose environment (the Galera packages, a
// cluster that would not form) is missing here, loudly, or fails it in CI.
func unavailable(t testing.TB, what string, err error, out []byte) {
	t.Helper()
	testdb.Unavailable(t, "Galera", what, err, out)
}

// node is one mariadbd of the cluster, with its four ports: SQL, group
// communication, incremental state transfer and full state transfer.
type node struct {
	n                         int
	dir                       string
	port, gport, iport, sport int

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{}
}

// exited reports whether the node's mariadbd has ended.
func (nd *node) exited() bool {
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (nd *node) addr() string { return fmt.Sprintf("127.0.0.1:%d", nd.port) }

// URL is sluice's URL of the test database on this node.
func (nd *node) URL() string { return fmt.Sprintf("mysql://root@%s/%s", nd.addr(), dbName) }

// admin is the DSN of the test's own connection to this node. Its metadata
// lock waits (FLUSH TABLES waits for the table's users) end after 60 s, not
// MariaDB's default of a year.
func (nd *node) admin() string {
	return fmt.Sprintf("root@tcp(%s)/%s?timeout=2s&lock_wait_timeout=60", nd.addr(), dbName)
}

type cluster struct {
	dir   string
	nodes []*node
	cred  *syscall.Credential
	// built is closed once build returned; startErr is why the cluster
	// could not be built, for every test.
	built    chan struct{}
	startErr error
	startOut []byte
}

var shared = &cluster{built: make(chan struct{})}

// getCluster returns the package's cluster once it has formed. It skips
// (or fails, in CI) when the Galera binaries are missing or the cluster
// did not form.
func getCluster(t *testing.T) *cluster {
	t.Helper()
	if err := installed(); err != nil {
		unavailable(t, "Galera binaries", err, nil)
	}
	<-shared.built
	if shared.startErr != nil {
		unavailable(t, "starting a 3-node Galera cluster", shared.startErr, shared.startOut)
	}
	return shared
}

// build makes the three data directories and forms the cluster: node 1
// bootstraps it (--wsrep-new-cluster) and the others join.
func (c *cluster) build() (error, []byte) {
	u, err := user.Lookup("mysql")
	if err != nil {
		return fmt.Errorf("user mysql: %w", err), nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// mariadbd runs as mysql from the start (not through --user), so that
	// the parent-death signal, which a later setuid would clear, kills it
	// if the test binary dies before its cleanup.
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if c.dir, err = os.MkdirTemp("", "sluice-galera"); err != nil {
		return err, nil
	}
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return err, nil
	}
	for i := 1; i <= 3; i++ {
		nd := &node{n: i, dir: filepath.Join(c.dir, fmt.Sprintf("n%d", i))}
		for _, p := range []*int{&nd.port, &nd.gport, &nd.iport, &nd.sport} {
			if *p, err = testdb.FreeLoopbackPort(); err != nil {
				return err, nil
			}
		}
		// Joiners start on an empty data directory: rsync SST fills it
		// before the storage engines start.
		if err := os.MkdirAll(nd.dir+"/tmp", 0o755); err != nil {
			return err, nil
		}
		if err := os.MkdirAll(nd.dir+"/data", 0o755); err != nil {
			return err, nil
		}
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		if err := os.WriteFile(nd.dir+"/my.cnf", []byte(c.config(nd)), 0o644); err != nil {
			return err, nil
		}
	}
	n1 := c.nodes[0]
	// A private tmpdir: at start-up mariadbd deletes every #sql* file in
	// its tmpdir, which in /tmp would include the shared server's.
	install := exec.Command("mariadb-install-db", "--defaults-file="+n1.dir+"/my.cnf", "--datadir="+n1.dir+"/data",
		"--user=mysql", "--auth-root-authentication-method=normal", "--skip-test-db")
	install.Env = append(os.Environ(), "TMPDIR="+n1.dir+"/tmp")
	if out, err := c.chown(); err != nil {
		return err, out
	}
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %w", err), out
	}
	if err := c.start(n1, "--wsrep-new-cluster"); err != nil {
		return err, c.errLog(n1)
	}
	if err := c.waitSynced(n1, 60*time.Second); err != nil {
		return err, c.errLog(n1)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", n1.addr()))
	if err != nil {
		return err, nil
	}
	_, err = db.Exec("CREATE DATABASE " + dbName)
	db.Close()
	if err != nil {
		return fmt.Errorf("create database: %w", err), nil
	}
	// The joiners start together; each copies node 1's data by rsync (a
	// state snapshot transfer), one after the other. Their ports were free
	// when picked, seconds ago: one taken since is picked again (nothing
	// has used the joiner's ports yet).
	for _, nd := range c.nodes[1:] {
		if !portFree(nd.port) {
			if nd.port, err = testdb.FreeLoopbackPort(); err != nil {
				return err, nil
			}
		}
		if err := c.movePorts(nd, false); err != nil {
			return err, nil
		}
		if err := os.WriteFile(nd.dir+"/my.cnf", []byte(c.config(nd)), 0o644); err != nil {
			return err, nil
		}
		if err := c.start(nd); err != nil {
			return err, c.errLog(nd)
		}
	}
	for _, nd := range c.nodes[1:] {
		if err := c.waitJoined(nd); err != nil {
			return err, c.errLog(nd)
		}
	}
	if size := c.status(n1, "wsrep_cluster_size"); size != "3" {
		return fmt.Errorf("cluster size %q after the joins, want 3", size), nil
	}
	return nil, nil
}

// waitJoined waits until a joiner is Synced, and starts it again on an
// empty data directory and fresh ports when it exited during its state
// transfer: a run beside a disk-heavy load saw a joiner's rsync daemon die
// at start ("terminated unexpectedly", status 16) and the node abort, while
// its twin joined from the same donor. A joiner that fails three times
// fails the cluster.
func (c *cluster) waitJoined(nd *node) error {
	for try := 1; ; try++ {
		err := c.waitSynced(nd, 240*time.Second)
		if err == nil || try == 3 || !nd.exited() {
			return err
		}
		fmt.Fprintf(os.Stderr, "galera: %v (try %d of 3); starting it again on an empty data directory; its log's tail:\n%s\n",
			err, try, proctest.Tail(string(c.errLog(nd)), 1500))
		if err := os.RemoveAll(nd.dir + "/data"); err != nil {
			return err
		}
		if err := os.MkdirAll(nd.dir+"/data", 0o755); err != nil {
			return err
		}
		if err := c.movePorts(nd, true); err != nil {
			return err
		}
		if out, err := c.chown(); err != nil {
			return fmt.Errorf("chown: %w: %s", err, out)
		}
		if err := c.start(nd); err != nil {
			return err
		}
	}
}

func (c *cluster) chown() ([]byte, error) {
	return exec.Command("chown", "-R", "mysql:mysql", c.dir).CombinedOutput()
}

// config is a node's my.cnf: a small buffer pool for a fast start, the
// settings Galera requires (row binlog format, interleaved auto-increment
// locks), and Galera's own failure detection (a node silent for 5 s is
// suspected): with 2 s, a CI run at load 40 split node 1 off the group
// right after it formed, and it stayed out of the primary component for
// the rest of the package. innodb_flush_log_at_trx_commit keeps its
// default, 1.
func (c *cluster) config(nd *node) string {
	var peers []string
	for _, p := range c.nodes {
		peers = append(peers, fmt.Sprintf("127.0.0.1:%d", p.gport))
	}
	return fmt.Sprintf(`[mysqld]
datadir=%[1]s/data
port=%[2]d
socket=%[1]s/sock
bind-address=127.0.0.1
tmpdir=%[1]s/tmp
pid-file=%[1]s/pid
log-error=%[1]s/err.log
innodb_buffer_pool_size=32M
innodb_log_file_size=32M
skip-log-bin
binlog_format=ROW
innodb_autoinc_lock_mode=2
max_connections=300
wsrep_on=ON
wsrep_provider=%[3]s
wsrep_cluster_name=sluice-test
wsrep_cluster_address=gcomm://%[4]s
wsrep_node_address=127.0.0.1:%[5]d
wsrep_node_name=n%[6]d
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:%[5]d;ist.recv_addr=127.0.0.1:%[7]d;gcache.size=128M"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:%[8]d
`, nd.dir, nd.port, provider, strings.Join(peers, ","), nd.gport, nd.n, nd.iport, nd.sport)
}

// recoverHeap bounds the heap of mariadbd --wsrep-recover (RLIMIT_DATA,
// set by prlimit, which then runs mariadbd in its place), which reads a
// few pages with a 32 MB buffer pool. In two CI runs one that met an
// unreadable .frm after the kill grew to 22 GB, and the whole machine
// thrashed for half an hour; with the bound it fails alone. The running
// nodes are not bounded: a bound that low stopped a donor node once.
const recoverHeap = 4 << 30

// mariadbdCmd is mariadbd on the node's my.cnf with extra flags, as the
// mysql user, killed if the test binary dies, its heap bounded to heap
// bytes unless heap is 0. A private tmpdir: at start-up mariadbd deletes
// every #sql* file in its tmpdir, which in /tmp would include the shared
// server's.
func (c *cluster) mariadbdCmd(ctx context.Context, nd *node, heap int64, extra ...string) *exec.Cmd {
	argv := append([]string{mariadbd, "--defaults-file=" + nd.dir + "/my.cnf"}, extra...)
	if heap > 0 {
		argv = append([]string{"prlimit", fmt.Sprintf("--data=%d", heap), "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+nd.dir+"/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start runs mariadbd on the node's data directory with extra flags.
func (c *cluster) start(nd *node, extra ...string) error {
	cmd := c.mariadbdCmd(context.Background(), nd, 0, extra...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", nd.n, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	nd.mu.Lock()
	nd.proc, nd.done = cmd, done
	nd.mu.Unlock()
	return nil
}

// status reads one of the node's status variables; "" when it cannot,
// for the waits that poll a node until it answers.
func (c *cluster) status(nd *node, name string) string { return c.statusVia(nd.addr(), name) }

// statusVia reads a status variable of the server at addr; "" when it cannot.
func (c *cluster) statusVia(addr, name string) string {
	v, _ := readStatus(addr, name)
	return v
}

// readStatus reads a status variable of the server at addr.
func readStatus(addr, name string) (string, error) {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/?timeout=1s&readTimeout=2s", addr))
	if err != nil {
		return "", err
	}
	defer db.Close()
	var k, v string
	// SHOW takes no placeholder; names are the test's own constants.
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		return "", fmt.Errorf("%s on %s: %w", name, addr, err)
	}
	return v, nil
}

// waitSynced waits until the node reports itself Synced with the group:
// only then does it serve reads and writes as a full member.
func (c *cluster) waitSynced(nd *node, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for c.status(nd, "wsrep_local_state_comment") != "Synced" {
		select {
		case <-nd.done:
			return fmt.Errorf("node %d exited while starting", nd.n)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d not Synced within %s", nd.n, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// kill SIGKILLs a node, as a crash or an OOM kill would.
func (c *cluster) kill(nd *node) {
	nd.mu.Lock()
	p, done := nd.proc, nd.done
	nd.mu.Unlock()
	p.Process.Signal(syscall.SIGKILL)
	<-done
}

var recovered = regexp.MustCompile(`WSREP: Recovered position: ([0-9a-f-]+:-?\d+)`)

// rejoin restarts a killed node as the packaged service does
// (galera_recovery): mariadbd --wsrep-recover reads the last committed
// position from InnoDB, and the node starts from it, so that it catches up
// by incremental state transfer (IST) from a donor's write-set cache
// instead of copying the whole data directory. It returns once the node
// is Synced again.
//
// A node whose data does not recover (MariaDB has found a table's .frm
// unreadable after the kill, and the recovery then grew until it was
// killed) rejoins as an operator would have it rejoin: with an empty data
// directory, by a full state transfer from a donor. The tests judge what
// sluice does across the kill, not InnoDB's crash recovery; the log says
// which way the node came back, and recovered reports whether its data
// did (and so whether it could catch up by IST).
func (c *cluster) rejoin(t testing.TB, nd *node) (recovered bool, err error) {
	start := []string{}
	if pos, err := c.recoverPosition(nd); err != nil {
		t.Logf("node %d did not recover its data after the kill; it rejoins by a full state transfer: %v", nd.n, err)
		if err := os.RemoveAll(nd.dir + "/data"); err != nil {
			return false, err
		}
		if err := os.MkdirAll(nd.dir+"/data", 0o755); err != nil {
			return false, err
		}
		if out, err := c.chown(); err != nil {
			return false, fmt.Errorf("chown: %w: %s", err, out)
		}
	} else {
		recovered = true
		start = append(start, "--wsrep-start-position="+pos)
	}
	// The node's ports were free when the cluster formed; another process
	// may have bound one while it was down. The SQL port is the test's
	// (HAProxy and the drivers use it); the group, IST and SST ports are
	// the node's to announce, so a taken one is replaced, and so is one
	// taken between this check and mariadbd's bind.
	if !portFree(nd.port) {
		return recovered, fmt.Errorf("node %d: SQL port %d was taken while the node was down", nd.n, nd.port)
	}
	for attempt := 1; ; attempt++ {
		if err := c.movePorts(nd, false); err != nil {
			return recovered, err
		}
		logStart := len(c.fullErrLog(nd))
		if err := c.start(nd, start...); err != nil {
			return recovered, err
		}
		err := c.waitSynced(nd, 150*time.Second)
		if err == nil || attempt == 3 || !bytes.Contains(c.fullErrLog(nd)[logStart:], []byte("Address already in use")) {
			return recovered, err
		}
		if err := c.movePorts(nd, true); err != nil {
			return recovered, err
		}
	}
}

// recoverTimeout bounds mariadbd --wsrep-recover, which reads a few pages
// and exits in a second or two.
const recoverTimeout = 3 * time.Minute

// recoverPosition runs mariadbd --wsrep-recover on the node's data and
// returns the last committed position it found.
func (c *cluster) recoverPosition(nd *node) (string, error) {
	logf := nd.dir + "/recover.log"
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	rec := c.mariadbdCmd(ctx, nd, recoverHeap, "--wsrep-recover", "--log-error="+logf)
	out, err := rec.CombinedOutput()
	b, _ := os.ReadFile(logf)
	if err != nil {
		return "", fmt.Errorf("--wsrep-recover: %w (within %s): %s\n%s", err, recoverTimeout, out, lastLines(b, 15))
	}
	m := recovered.FindAllSubmatch(b, -1)
	if m == nil {
		return "", fmt.Errorf("no recovered position in %s:\n%s", logf, lastLines(b, 15))
	}
	return string(m[len(m)-1][1]), nil
}

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], []byte("\n"))
}

// movePorts gives the node new group, IST and SST ports in place of those
// another process holds (all three when all is set), and rewrites its
// my.cnf.
func (c *cluster) movePorts(nd *node, all bool) error {
	moved := false
	for _, p := range []*int{&nd.gport, &nd.iport, &nd.sport} {
		if all || !portFree(*p) {
			var err error
			if *p, err = testdb.FreeLoopbackPort(); err != nil {
				return err
			}
			moved = true
		}
	}
	if !moved {
		return nil
	}
	return os.WriteFile(nd.dir+"/my.cnf", []byte(c.config(nd)), 0o644)
}

// portFree reports whether nothing listens on, or is bound to, the
// loopback port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// transferKind says how the node last caught up: "IST" or "SST".
func (c *cluster) transferKind(nd *node) string {
	b := c.errLog(nd)
	ist := bytes.LastIndex(b, []byte("IST received"))
	sst := bytes.LastIndex(b, []byte("SST succeeded"))
	switch {
	case ist < 0 && sst < 0:
		return "none"
	case sst > ist:
		return "SST"
	default:
		return "IST"
	}
}

func (c *cluster) errLog(nd *node) []byte {
	b := c.fullErrLog(nd)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return b
}

func (c *cluster) fullErrLog(nd *node) []byte {
	b, _ := os.ReadFile(nd.dir + "/err.log")
	return b
}

func (c *cluster) stop() {
	for _, nd := range c.nodes {
		nd.mu.Lock()
		p, done := nd.proc, nd.done
		nd.mu.Unlock()
		if p != nil {
			p.Process.Signal(syscall.SIGKILL)
			<-done
		}
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// adminDB opens the test's own pool on one node.
func adminDB(t *testing.T, nd *node) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", nd.admin())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// certFailures sums, over the nodes, all of which must answer, the
// transactions aborted by a conflict with another node's write set:
// certification failures and brute-force aborts of local transactions by
// replicated ones. A read that fails fails the test: counted as 0 it
// would make a later difference mean nothing.
func (c *cluster) certFailures(t *testing.T) int {
	t.Helper()
	n := 0
	for _, nd := range c.nodes {
		for _, name := range []string{"wsrep_local_cert_failures", "wsrep_local_bf_aborts"} {
			v, err := readStatus(nd.addr(), name)
			require.NoError(t, err)
			x, err := strconv.Atoi(v)
			require.NoError(t, err, "%s on %s", name, nd.addr())
			n += x
		}
	}
	return n
}

// logProcesses logs, for each node that answers, its state in the group,
// whether flow control pauses it, and what every connection is doing: what
// a test that met a call that did not return needs to say why.
func (c *cluster) logProcesses(t *testing.T) {
	t.Helper()
	for _, nd := range c.nodes {
		state, paused := c.status(nd, "wsrep_local_state_comment"), c.status(nd, "wsrep_flow_control_paused")
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/?timeout=1s&readTimeout=5s", nd.addr()))
		if err != nil {
			t.Logf("node %d: %v", nd.n, err)
			continue
		}
		var lines []string
		rows, err := db.Query("SELECT id, command, time, COALESCE(state, ''), LEFT(COALESCE(info, ''), 200) FROM information_schema.processlist ORDER BY time DESC")
		if err == nil {
			for rows.Next() {
				var id, secs int64
				var command, st, info string
				if rows.Scan(&id, &command, &secs, &st, &info) == nil {
					lines = append(lines, fmt.Sprintf("  %d %s %ds %q %q", id, command, secs, st, info))
				}
			}
			err = rows.Close()
		}
		db.Close()
		t.Logf("node %d: %s, flow control paused %s; processes (err %v):\n%s", nd.n, state, paused, err, strings.Join(lines, "\n"))
	}
}

func ctxT(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
