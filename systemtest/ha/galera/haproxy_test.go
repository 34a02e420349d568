package galera

import (
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// checkScript is HAProxy's health check of a Galera node, the job that
// clustercheck does in packaged deployments: a node is up only while it
// reports wsrep_local_state 4 (Synced). A node that is joining, donating
// or cut off from the primary component answers connections but refuses
// queries, so a plain TCP or mysql-check would send clients to it.
const checkScript = `#!/bin/sh
# HAProxy passes: proxy address, proxy port, server address, server port.
state=$(mysql -h"$3" -P"$4" -uroot --connect-timeout=3 -Nse "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'" 2>/dev/null | cut -f2)
[ "$state" = 4 ]
`

// haproxy is one HAProxy in front of the cluster, spreading connections
// over the Synced nodes (leastconn) and cutting the sessions of a node as
// soon as its check fails, so that clients reconnect to a live one. A
// check every 3 s, and every 1 s once one failed, with a 10 s timeout:
// on this loaded machine a shorter timeout killed slow checks of healthy
// nodes, whose sessions HAProxy then cut.
type haproxy struct {
	addr  string
	stats string // the admin socket
	cmd   *exec.Cmd
	done  chan struct{}
}

func startHAProxy(t *testing.T, c *cluster) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if bin = "/usr/sbin/haproxy"; !exists(bin) {
			unavailable(t, "haproxy binary (apt-get install haproxy)", err, nil)
		}
	}
	dir := t.TempDir()
	check := dir + "/galera-check.sh"
	if err := os.WriteFile(check, []byte(checkScript), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &haproxy{addr: testdb.FreeAddr(t), stats: dir + "/stats.sock", done: make(chan struct{})}
	var servers []string
	for _, nd := range c.nodes {
		servers = append(servers, fmt.Sprintf("  server n%d %s check", nd.n, nd.addr()))
	}
	cfg := fmt.Sprintf(`global
  external-check
  insecure-fork-wanted
  maxconn 2000
  stats socket %s
defaults
  mode tcp
  timeout connect 2s
  timeout check 10s
  timeout client 10m
  timeout server 10m
  retries 2
listen galera
  bind %s
  balance leastconn
  option external-check
  external-check path "/usr/bin:/bin"
  external-check command %s
  default-server inter 3s fastinter 1s downinter 1s fall 2 rise 1 on-marked-down shutdown-sessions
%s
`, h.stats, h.addr, check, strings.Join(servers, "\n"))
	cfgPath := dir + "/haproxy.cfg"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out testdb.SyncBuffer
	h.cmd = exec.Command(bin, "-db", "-f", cfgPath)
	h.cmd.Stdout, h.cmd.Stderr = &out, &out
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		unavailable(t, "start haproxy", err, nil)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.done
		if t.Failed() {
			t.Logf("haproxy output (tail):\n%s", proctest.Tail(out.String(), 3000))
		}
	})
	// Up when a query through it answers: the checks have passed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.DialTimeout("tcp", h.addr, time.Second); err == nil {
			conn.Close()
			if c.statusVia(h.addr, "wsrep_local_state") == "4" {
				break
			}
		}
		select {
		case <-h.done:
			unavailable(t, "haproxy exited", fmt.Errorf("%v", h.cmd.ProcessState), []byte(out.String()))
		default:
		}
		if time.Now().After(deadline) {
			unavailable(t, "haproxy did not pass a query within 30s", nil, []byte(out.String()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return h
}

// sessions is how many client sessions HAProxy holds open on the node: the
// column scur of its server line in `show stat`.
func (h *haproxy) sessions(t *testing.T, nd *node) int {
	t.Helper()
	conn, err := net.Dial("unix", h.stats)
	if err != nil {
		t.Fatalf("haproxy stats socket: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("show stat\n")); err != nil {
		t.Fatalf("haproxy show stat: %v", err)
	}
	rows, err := csv.NewReader(conn).ReadAll()
	if err != nil {
		t.Fatalf("haproxy show stat: %v", err)
	}
	col := slices.Index(rows[0], "scur")
	for _, r := range rows[1:] {
		if r[0] == "galera" && r[1] == fmt.Sprintf("n%d", nd.n) {
			n, err := strconv.Atoi(r[col])
			if err != nil {
				t.Fatalf("haproxy show stat: scur %q: %v", r[col], err)
			}
			return n
		}
	}
	t.Fatalf("haproxy show stat: no server n%d in %v", nd.n, rows)
	return 0
}

// URL is sluice's URL of the test database through HAProxy.
func (h *haproxy) URL() string { return fmt.Sprintf("mysql://root@%s/%s", h.addr, dbName) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
