package readmetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blockTimeout bounds one block; the slowest builds sluice (about 5 s).
const blockTimeout = 3 * time.Minute

// settle is how long a block's background jobs (servers such as
// `sluice work &`) must survive after its last line: a server that fails
// at start fails its block.
const settle = 2 * time.Second

// scene is one scenario's sandbox: a home directory, a working directory
// and the environment the blocks see.
type scene struct {
	home, dir, tmp, scripts string
	env                     map[string]string

	files   map[string]bool // repo: the copied files (see setupRepo)
	appURL  string          // mysql, php: the README's MySQL database
	serving bool            // php: sluice serve was started
}

var goEnv = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 3 {
		return nil, fmt.Errorf("go env: unexpected output %q", out)
	}
	return map[string]string{"GOCACHE": f[0], "GOMODCACHE": f[1], "GOPATH": f[2]}, nil
})

// newScene makes a sandbox with sluice on PATH. HOME and TMPDIR point into
// it, so nothing a block does (lock files included) lands outside; the Go
// caches stay the user's, so a block's `go build` is not a cold build.
func newScene(t *testing.T) *scene {
	t.Helper()
	root := t.TempDir()
	sc := &scene{home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp"),
		scripts: filepath.Join(root, "scripts"), env: map[string]string{}}
	sc.dir = filepath.Join(sc.home, "app")
	for _, d := range []string{sc.dir, sc.tmp, sc.scripts} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	ge, err := goEnv()
	require.NoError(t, err)
	for k, v := range ge {
		sc.env[k] = v
	}
	sc.env["HOME"] = sc.home
	sc.env["TMPDIR"] = sc.tmp
	sc.env["PATH"] = filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	return sc
}

// environ is the process environment without any SLUICE_ setting of the
// caller's, plus the scene's.
func (sc *scene) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLUICE_") {
			continue
		}
		if _, ok := sc.env[k]; ok {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range sc.env {
		env = append(env, k+"="+v)
	}
	return env
}

// wrapper runs a block file ($1) as a bash script with -e and pipefail.
// Its DEBUG trap, in the block's own shell only (not in command
// substitutions or background jobs), prints a marker with the block's line
// number before each command, so that each line's output can be checked,
// and notes the pid of every background job the block starts ($! changes).
// After the last line, every such job (a server such as `sluice work &`)
// must still run; then they are stopped and waited for.
const wrapper = `__readme_block=$1 __readme_bg=
__readme_note_bg() { if [ -n "$!" ] && [ "$!" != "${__readme_bg##* }" ]; then __readme_bg="$__readme_bg $!"; fi; }
set -eT -o pipefail
trap 'if [ "$BASH_SUBSHELL" = 0 ] && [ "${BASH_SOURCE[0]}" = "$__readme_block" ]; then printf "\036readme-line %s\036\n" "$LINENO"; __readme_note_bg; fi' DEBUG
source "$__readme_block"
trap - DEBUG
set +e
__readme_note_bg
if [ -n "$__readme_bg" ]; then
  sleep SETTLE
  dead=
  for p in $__readme_bg; do kill -0 "$p" 2>/dev/null || dead="$dead $p"; done
  kill $__readme_bg 2>/dev/null
  wait
  if [ -n "$dead" ]; then
    echo "readme-test: background jobs of the block ended before the block did (pids$dead)" >&2
    exit 97
  fi
fi
`

var lineMarkRe = regexp.MustCompile("\x1ereadme-line (\\d+)\x1e\n")

// runShell runs a sh block verbatim and checks its exit status and the
// outputs its comments show.
func (sc *scene) runShell(t *testing.T, b Block) {
	t.Helper()
	script := filepath.Join(sc.scripts, fmt.Sprintf("block-%d.sh", b.Line))
	require.NoError(t, os.WriteFile(script, []byte(b.Text), 0o644))
	stdout, stderr, err := sc.exec(t, "bash", "-c", strings.Replace(wrapper, "SETTLE", fmt.Sprint(settle.Seconds()), 1), "readme-block", script)
	perLine := map[int]string{}
	idx := lineMarkRe.FindAllStringSubmatchIndex(stdout, -1)
	for i, m := range idx {
		n, _ := strconv.Atoi(stdout[m[2]:m[3]])
		end := len(stdout)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		perLine[n] += stdout[m[1]:end]
	}
	clean := lineMarkRe.ReplaceAllString(stdout, "")
	t.Logf("%s:\n%s--- stdout:\n%s--- stderr:\n%s", b, b.Text, clean, stderr)
	require.NoError(t, err, "%s failed; stderr:\n%s", b, stderr)
	checkExpected(t, b, perLine)
}

// cronLineRe splits a crontab line into its five time fields and command.
var cronLineRe = regexp.MustCompile(`^\s*(?:\S+\s+){5}(.*)$`)

// runCrontab runs each line of a crontab block as cron would: its command
// (the text after the five time fields) with sh -c, in the scene's
// environment, from its home directory. Each must exit 0.
func (sc *scene) runCrontab(t *testing.T, b Block) {
	t.Helper()
	n := 0
	for i, line := range strings.Split(b.Text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		m := cronLineRe.FindStringSubmatch(line)
		require.NotNil(t, m, "%s line %d: not a crontab line: %s", b, i+1, line)
		stdout, stderr, err := sc.execIn(t, sc.home, "sh", "-c", m[1])
		t.Logf("%s line %d: %s\n--- stdout:\n%s--- stderr:\n%s", b, i+1, m[1], stdout, stderr)
		require.NoError(t, err, "%s line %d: %s\nstderr: %s", b, i+1, m[1], stderr)
		n++
	}
	require.NotZero(t, n, "%s: no crontab lines", b)
}

func (sc *scene) exec(t *testing.T, name string, args ...string) (string, string, error) {
	t.Helper()
	return sc.execIn(t, sc.dir, name, args...)
}

// execIn runs a command in its own process group and, when it has exited,
// stops whatever it left behind in that group, so no block leaks a process.
func (sc *scene) execIn(t *testing.T, dir, name string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	// Files, not pipes: a leftover background process holding a pipe open
	// would keep Wait from returning.
	outF, err := os.CreateTemp(sc.scripts, "stdout")
	require.NoError(t, err)
	errF, err := os.CreateTemp(sc.scripts, "stderr")
	require.NoError(t, err)
	defer outF.Close()
	defer errF.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = sc.environ()
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if cmd.Process != nil {
		stopGroup(cmd.Process.Pid)
	}
	stdout, err := os.ReadFile(outF.Name())
	require.NoError(t, err)
	stderr, err := os.ReadFile(errF.Name())
	require.NoError(t, err)
	if ctx.Err() != nil {
		runErr = fmt.Errorf("timed out after %v: %w", blockTimeout, runErr)
	}
	return string(stdout), string(stderr), runErr
}

// stopGroup sends SIGTERM to a process group, gives it a few seconds to
// shut down cleanly, then kills what is left.
func stopGroup(pgid int) {
	if errors.Is(syscall.Kill(-pgid, syscall.SIGTERM), syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}
