package patroni

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testdb"
)

// proc is a running sluice process with its stderr captured.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr testdb.SyncBuffer
	done   chan struct{}
	err    error
}

// startSluice runs the sluice binary with env added to a clean
// environment: SLUICE_DB and SLUICE_CONFIG are blanked so that the config
// file's db: is what the process connects to, as users run it.
func startSluice(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "SLUICE_DB=", "SLUICE_PREFIX=", "SLUICE_CONFIG="), env...)
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s (pid %d) stderr (tail):\n%s", p.name, p.cmd.Process.Pid, tailBytes([]byte(p.stderr.String()), 3000))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// term sends SIGTERM and returns the exit error.
func (p *proc) term(t *testing.T, limit time.Duration) error {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		return p.err
	case <-time.After(limit):
		t.Fatalf("%s (pid %d) did not exit within %s of SIGTERM", p.name, p.cmd.Process.Pid, limit)
		return nil
	}
}

// runSluice runs one sluice command to its end.
func runSluice(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "SLUICE_DB=", "SLUICE_PREFIX=", "SLUICE_CONFIG="), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeConfig writes a sluice config on url whose "work" type runs a
// command that logs "start KEY ATTEMPT PID" and "end KEY ATTEMPT PID"
// around a short sleep. Jobs are told apart by business key, not id: a
// primary lost with commits not replicated may have handed out ids that
// the new primary hands out again. $PPID is the sluice process (the argv runs
// without a shell in between), so a line says which process ran it. Each
// echo is one short O_APPEND write, so lines land whole.
func writeConfig(t *testing.T, dir, name, url, logPath string) string {
	t.Helper()
	script := fmt.Sprintf(`echo "start $SLUICE_JOB_KEY $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s; sleep %[2]s; echo "end $SLUICE_JOB_KEY $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s`,
		logPath, jobSleep)
	cfg := fmt.Sprintf(`db: %q
queues:
  default: { concurrency: %d }
types:
  work:
    command: ["sh", "-c", %q]
    timeout: 60s
    lease: %s
    backoff: { base: 100ms, max: 1s }
`, url, workConcurrency, script, jobLease)
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// execRun is one run of a job as the execution log saw it.
type execRun struct {
	attempt, pid int
	ended        bool
}

// readLog reads the execution log: every run of every job, by key. It is
// read once the workers are stopped, so every line must parse.
func readLog(t *testing.T, path string) map[string][]*execRun {
	t.Helper()
	runs := map[string][]*execRun{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return runs
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind, id string
		var attempt, pid int
		_, err := fmt.Sscanf(sc.Text(), "%s %s %d %d", &kind, &id, &attempt, &pid)
		require.NoError(t, err, "log line %q", sc.Text())
		switch kind {
		case "start":
			runs[id] = append(runs[id], &execRun{attempt: attempt, pid: pid})
		case "end":
			found := false
			for _, r := range runs[id] {
				if r.attempt == attempt && r.pid == pid && !r.ended {
					r.ended, found = true, true
					break
				}
			}
			require.True(t, found, "end without start: %q", sc.Text())
		default:
			t.Fatalf("bad log line %q", sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return runs
}

// countEnds counts the "end" lines so far.
func countEnds(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := bytes.Count(b, []byte("\nend "))
	if bytes.HasPrefix(b, []byte("end ")) {
		n++
	}
	return n
}
