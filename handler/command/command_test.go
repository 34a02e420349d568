//go:build unix

package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/command"
)

func testJob() *sluice.Job {
	return &sluice.Job{ID: 42, Type: "report", Key: "2024-06", Attempt: 3, MaxAttempts: 5,
		Payload: json.RawMessage(`{"month":"2024-06"}`), CreatedAt: time.UnixMicro(1700000000123456)}
}

// shell builds a handler running script with sh -c. The handler itself
// uses no shell; the tests need one to build process trees.
func shell(t *testing.T, script string, cfg command.Config) *command.Handler {
	t.Helper()
	cfg.Argv = []string{"sh", "-c", script}
	h, err := command.New(cfg)
	require.NoError(t, err)
	return h
}

func TestExitZeroStoresStdout(t *testing.T) {
	job := testJob()
	require.NoError(t, shell(t, `echo built; echo noise >&2`, command.Config{}).Work(context.Background(), job))
	require.Equal(t, "built\n", resultOf(t, job))
}

func TestNonZeroExitIsTransientWithStderr(t *testing.T) {
	err := shell(t, `echo "db is down" >&2; exit 3`, command.Config{}).Work(context.Background(), testJob())
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err))
	require.Equal(t, "command sh: exit code 3: db is down", err.Error())
}

func TestPermanentExitCodes(t *testing.T) {
	err := shell(t, `echo "month is malformed" >&2; exit 65`, command.Config{}).Work(context.Background(), testJob())
	require.True(t, sluice.IsPermanent(err), "65 is permanent by default: %v", err)
	require.Contains(t, err.Error(), "exit code 65: month is malformed")

	err = shell(t, `exit 2`, command.Config{PermanentExitCodes: []int{2}}).Work(context.Background(), testJob())
	require.True(t, sluice.IsPermanent(err))
	require.Contains(t, err.Error(), "exit code 2 (no stderr output)")

	err = shell(t, `exit 65`, command.Config{PermanentExitCodes: []int{}}).Work(context.Background(), testJob())
	require.False(t, sluice.IsPermanent(err), "an empty list makes every exit transient")
}

func TestStdinAndEnvironment(t *testing.T) {
	t.Setenv("LC_TIME", "inherited")
	t.Setenv("SLUICE_JOB_ID", "spoofed")
	job := testJob()
	h := shell(t, `cat; echo; echo "$SLUICE_JOB_ID|$SLUICE_JOB_TYPE|$SLUICE_JOB_KEY|$SLUICE_JOB_ATTEMPT|$SLUICE_IDEMPOTENCY_KEY|$LC_TIME|$EXTRA|$(pwd)"`,
		command.Config{Env: []string{"EXTRA=extra", "SLUICE_JOB_TYPE=spoofed", "SLUICE_IDEMPOTENCY_KEY=spoofed"}, Dir: "/"})
	require.NoError(t, h.Work(context.Background(), job))

	stdin, env, _ := strings.Cut(resultOf(t, job), "\n")
	require.JSONEq(t, `{"id":42,"type":"report","key":"2024-06","attempt":3,"max_attempts":5,"payload":{"month":"2024-06"}}`, stdin)
	require.Equal(t, "42|report|2024-06|3|job-42-1700000000123456|inherited|extra|/\n", env)
}

// A command sees none of sluice's own environment: its tokens, webhook
// secrets and database URL stay with sluice. It gets what programs need
// to run (command.BaseEnv), what its Config.Env names and the job's own
// variables.
func TestCommandSeesNoneOfSluicesSecrets(t *testing.T) {
	for k, v := range map[string]string{"SLUICE_TOKEN": "tok-secret", "SLUICE_DB": "mysql://app:pw-secret@db/app",
		"HOOK_SECRET": "hook-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "TZ": "Asia/Shanghai", "HOME": "/home/app"} {
		t.Setenv(k, v)
	}
	job := testJob()
	require.NoError(t, shell(t, `env`, command.Config{Env: []string{"APP_ENV=production"}}).Work(context.Background(), job))
	env := resultOf(t, job)
	require.NotContains(t, env, "secret")
	require.NotContains(t, env, "SLUICE_TOKEN=")
	require.NotContains(t, env, "SLUICE_DB=")
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/app", "TZ=Asia/Shanghai", "APP_ENV=production", "SLUICE_JOB_ID=42"} {
		require.Contains(t, strings.Split(env, "\n"), want)
	}
}

func TestOutputKeepsOnlyTheTail(t *testing.T) {
	job := testJob()
	// About 1 MB on each stream, ending with a marker.
	h := shell(t, `yes 0123456789abcdef | head -n 65536; echo END; yes e | head -n 500000 >&2; echo ERR-END >&2; exit 1`,
		command.Config{PermanentExitCodes: []int{}})
	err := h.Work(context.Background(), job)
	require.Error(t, err)
	require.True(t, strings.HasSuffix(err.Error(), "e\ne\nERR-END"), "stderr keeps its tail")
	require.Less(t, len(err.Error()), 4<<10+100, "stderr is capped at 4 KiB")

	job = testJob()
	require.NoError(t, shell(t, `yes 0123456789abcdef | head -n 65536; echo END`, command.Config{}).Work(context.Background(), job))
	out := resultOf(t, job)
	require.Len(t, out, 64<<10)
	require.True(t, strings.HasSuffix(out, "0123456789abcdef\nEND\n"))
}

func TestTimeoutKillsTheProcessTree(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// A grace far longer than any machine's delay: a run that ends well
	// before it was ended by SIGTERM, not by the SIGKILL after the grace.
	h := shell(t, `sleep 300 & echo $! > `+pidFile+`; echo working >&2; sleep 300`,
		command.Config{Timeout: 300 * time.Millisecond, KillGrace: 2 * time.Minute})

	start := time.Now()
	err := h.Work(context.Background(), testJob())
	took := time.Since(start)
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err), "a timeout is transient")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "working")
	require.Less(t, took, time.Minute, "sleep dies on SIGTERM, well before the grace ends")
	requireGone(t, readPid(t, pidFile))
}

func TestGraceEndsWithSigkill(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// Ignored signals are inherited, so the grandchild ignores SIGTERM too.
	h := shell(t, `trap "" TERM; sleep 60 & echo $! > `+pidFile+`; wait`,
		command.Config{Timeout: 200 * time.Millisecond, KillGrace: 300 * time.Millisecond})

	start := time.Now()
	err := h.Work(context.Background(), testJob())
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "ended by signal 9")
	require.GreaterOrEqual(t, took, 500*time.Millisecond, "SIGKILL waits for the grace")
	// Only SIGKILL ends a shell that ignores SIGTERM before its sleep 60
	// does; the bound tells the two apart on a loaded machine too.
	require.Less(t, took, 30*time.Second)
	requireGone(t, readPid(t, pidFile))
}

func TestCancellationStopsTheCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	err := shell(t, `sleep 60`, command.Config{}).Work(ctx, testJob())
	require.ErrorIs(t, err, context.Canceled, "the worker must see its own context's end")
}

func TestBackgroundChildDoesNotHoldTheJob(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The leader exits at once; its background child keeps stdout open.
	job := testJob()
	start := time.Now()
	require.NoError(t, shell(t, `sleep 60 & echo $! > `+pidFile+`; echo done`, command.Config{}).Work(context.Background(), job))
	require.Less(t, time.Since(start), 30*time.Second, "the job waited for its background sleep 60")
	require.Equal(t, "done\n", resultOf(t, job))
	requireGone(t, readPid(t, pidFile))
}

func TestMissingProgramIsTransient(t *testing.T) {
	h, err := command.New(command.Config{Argv: []string{"sluice-no-such-program"}})
	require.NoError(t, err, "New does not look the program up")
	err = h.Work(context.Background(), testJob())
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err))
	require.ErrorIs(t, err, exec.ErrNotFound)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []command.Config{
		{},
		{Argv: []string{""}},
		{Argv: []string{"true"}, Timeout: -time.Second},
		{Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
	} {
		_, err := command.New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// requireGone waits briefly for pid to die. A zombie counts as gone: it
// has stopped running, and reaping it is up to whoever adopted it.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return true
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return os.IsNotExist(err)
		}
		// The state follows the parenthesised command name.
		_, after, _ := strings.Cut(string(stat), ") ")
		return strings.HasPrefix(after, "Z")
	}, 2*time.Second, 20*time.Millisecond, "process %d survived its job", pid)
}

// resultOf reads the result the handler stored.
func resultOf(t *testing.T, job *sluice.Job) string {
	t.Helper()
	r, ok := job.Result()
	require.True(t, ok, "no result stored")
	return r
}

// Exit 0 is success even when it comes after a stop: the command finished
// (or says it did), and running it again would repeat done work. This is
// also what a command that ends on its own just as a shutdown deadline
// passes gets, whichever of the two the handler sees first.
//
// The stop comes once the shell has set its trap (the ready file), and the
// shell waits in foreground sleeps: a SIGTERM that lands while a trapping
// shell forks a background child can be swallowed by the child (it still
// has the shell's handler until its exec), which then outlives the trap
// until the kill grace ends, as a CI run at load 40 saw (63 s).
func TestExitZeroAfterStopIsSuccess(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	h := shell(t, `trap "echo stopped cleanly; exit 0" TERM; echo > `+ready+`; while :; do sleep 0.1; done`,
		command.Config{KillGrace: time.Minute})
	job := testJob()
	start := time.Now()
	require.NoError(t, h.Work(cancelWhenReady(ready), job))
	require.Less(t, time.Since(start), 30*time.Second, "the trap ended it on SIGTERM, not SIGKILL at the grace's end")
	require.Equal(t, "stopped cleanly\n", resultOf(t, job))
}
