// Package proctest runs the real `sluice` binary as separate processes, as
// users run it, for the fault, HA and crash suites, and reads the execution
// logs that their command handlers write.
package proctest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// Env is a sluice process's environment: the test's own without the
// variables that choose a database, a config file or a table prefix, so
// that only env and the arguments do.
func Env(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "SLUICE_DB" && k != "SLUICE_LISTEN_DB" && k != "SLUICE_CONFIG" && k != "SLUICE_PREFIX" {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// Command is the sluice binary bin with args, in the environment Env(env)
// and a fresh empty working directory, so that a command that falls back
// to ./sluice.yaml or ./sluice.db never touches the source tree.
func Command(t testing.TB, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = Env(env)
	cmd.Dir = t.TempDir()
	return cmd
}

// Config writes a config file that names its database with db: url,
// followed by body, and returns its path: the processes find their
// database that way, as users run them (Env leaves out SLUICE_DB, which
// would win over db:).
func Config(t testing.TB, url, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("db: %q\n%s", url, body)), 0o644))
	return path
}

// WorkConfig writes a config on url, as Config does, with a "work" type
// that runs script in a shell at concurrency; typeExtra adds keys to the
// type (indented by four spaces), extra adds top-level YAML.
func WorkConfig(t testing.TB, url string, concurrency int, script, typeExtra, extra string) string {
	t.Helper()
	return Config(t, url, fmt.Sprintf(`queues:
  default: { concurrency: %d }
types:
  work:
    command: ["sh", "-c", %q]
    timeout: 60s
    backoff: { base: 100ms, max: 1s }
%s
%s`, concurrency, script, typeExtra, extra))
}

// Result is how a sluice command ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the sluice binary bin with args to its end.
func Run(t testing.TB, bin string, env []string, args ...string) Result {
	t.Helper()
	return RunCmd(t, Command(t, bin, env, args...))
}

// RunCmd runs cmd to its end, failing the test if it could not run.
func RunCmd(t testing.TB, cmd *exec.Cmd) Result {
	t.Helper()
	r, err := Output(cmd)
	require.NoError(t, err, "run %v", cmd.Args)
	return r
}

// Output runs cmd to its end. Its error is only one that kept cmd from
// running: an exit status is the Result's Code.
func Output(cmd *exec.Cmd) (Result, error) {
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return Result{ee.ExitCode(), so.String(), se.String()}, nil
	}
	return Result{0, so.String(), se.String()}, err
}

// Proc is a running sluice process with its stderr captured. It is
// killed when the test ends, and its stderr's tail logged if the test
// failed.
type Proc struct {
	Name string // says which process a message is about
	Cmd  *exec.Cmd

	stderr testdb.SyncBuffer
	done   chan struct{}
	err    error
}

// Start starts the sluice binary bin with args.
func Start(t testing.TB, bin, name string, env []string, args ...string) *Proc {
	t.Helper()
	return StartCmd(t, name, Command(t, bin, env, args...))
}

// StartCmd starts cmd, with its stderr captured.
func StartCmd(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	p.Cmd.Stderr = &p.stderr
	require.NoError(t, p.Cmd.Start())
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.Exited() {
			p.Cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			// Its warnings and errors first: the tail alone showed only the
			// end of a shutdown, not the cut that left a job behind.
			if w := Troubles(p.Stderr(), 40); w != "" {
				t.Logf("%s (pid %d) warnings and errors:\n%s", p.Name, p.Pid(), w)
			}
			t.Logf("%s (pid %d) stderr (tail):\n%s", p.Name, p.Pid(), Tail(p.Stderr(), 3000))
		}
	})
	return p
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Stderr is what the process wrote to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Done is closed once the process exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error, once Done is closed.
func (p *Proc) Err() error { return p.err }

// Wait waits for the process to exit and returns its exit error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Term sends SIGTERM and returns the exit error, failing the test if the
// process is still running after limit.
func (p *Proc) Term(t testing.TB, limit time.Duration) error {
	t.Helper()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		return p.err
	case <-time.After(limit):
		t.Fatalf("%s (pid %d) did not exit within %s of SIGTERM", p.Name, p.Pid(), limit)
		return nil
	}
}

// Troubles is the first n of the WARN and ERROR lines of a sluice log.
func Troubles(log string, n int) string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			if len(out) == n {
				out = append(out, "…\n")
				break
			}
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// Tail is the last n bytes of s, for logging a long output.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Healthy reports whether the `sluice serve` at base (http://host:port)
// answers /healthz with 200, for a test waiting for it to come up.
func Healthy(base string) bool {
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
