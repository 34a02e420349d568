package command_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/internal/worker"
)

// TestMain lets the test binary act as a Go program that runs a command
// job, for TestWorkerKillKillsTheTree: a library user's binary, not sluice.
func TestMain(m *testing.M) {
	if script := os.Getenv("COMMANDTEST_RUN"); script != "" {
		h, err := command.New(command.Config{Argv: []string{"sh", "-c", script}})
		if err == nil {
			err = h.Work(context.Background(), testJob())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// treeScript starts a process tree in the background and waits until it
// is in place: a child in the command's group and one that left it with
// setsid, both ignoring SIGTERM, their pids in dir/group and dir/escaped.
func treeScript(dir string) string {
	return fmt.Sprintf(`sh -c 'trap "" TERM; echo $$ > %[1]s/group; exec sleep 60' &
setsid sh -c 'trap "" TERM; echo $$ > %[1]s/escaped; exec sleep 60' &
while [ ! -s %[1]s/group ] || [ ! -s %[1]s/escaped ]; do sleep 0.01; done
`, dir)
}

// requireGoneNow asserts that pid is no longer running, without waiting:
// Work returns only once the command's whole tree is gone.
func requireGoneNow(t *testing.T, pid int) {
	t.Helper()
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	_, after, _ := strings.Cut(string(stat), ") ")
	require.True(t, strings.HasPrefix(after, "Z"), "pid %d still runs: %s", pid, stat)
}

// A command that ends leaves nothing running, not even a process that
// left its process group.
func TestNothingOutlivesAnEndedCommand(t *testing.T) {
	dir := t.TempDir()
	job := testJob()
	require.NoError(t, shell(t, treeScript(dir)+`echo done`, command.Config{}).Work(context.Background(), job))
	require.Equal(t, "done\n", resultOf(t, job))
	requireGoneNow(t, readPid(t, dir+"/group"))
	requireGoneNow(t, readPid(t, dir+"/escaped"))
}

// A stopped command finishes its item within the grace and its exit 0
// counts; Work returns once every process it started is gone, the
// escaped one included, which ignored SIGTERM and got SIGKILL.
func TestStopWaitsForTheWholeTree(t *testing.T) {
	dir := t.TempDir()
	h := shell(t, treeScript(dir)+`trap "sleep 0.2; echo finished; exit 0" TERM; echo > `+dir+`/ready; sleep 60 & wait`,
		// The trap's 0.2 s must fit in the grace on a loaded machine (500 ms
		// did not, under two CI runs at once); the escaped process, which
		// ignores SIGTERM, is killed when the grace ends.
		command.Config{KillGrace: 5 * time.Second})
	ctx := cancelWhenReady(dir + "/ready")
	job := testJob()
	require.NoError(t, h.Work(ctx, job), "an exit 0 within the grace is a success")
	require.Equal(t, "finished\n", resultOf(t, job))
	requireGoneNow(t, readPid(t, dir+"/group"))
	requireGoneNow(t, readPid(t, dir+"/escaped"))
}

// SIGKILL of the process running a command job kills the command's whole
// tree: here that process is a Go program using the handler, as a
// library user's would be.
func TestWorkerKillKillsTheTree(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "COMMANDTEST_RUN="+treeScript(dir)+`echo $$ > `+dir+`/leader; sleep 60`)
	require.NoError(t, cmd.Start())
	testdb.WaitFor(t, 30*time.Second, "the command started its tree", func() bool {
		_, err := os.Stat(filepath.Join(dir, "leader"))
		return err == nil
	})
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	// The supervisor learns of the death by a signal: give it a moment.
	for _, f := range []string{"leader", "group", "escaped"} {
		requireGone(t, readPid(t, filepath.Join(dir, f)))
	}
}

// A stopped command gets one SIGTERM, not one for its group and another
// for itself: a trap that finishes an item must not run twice.
func TestStopSignalsACommandOnce(t *testing.T) {
	dir := t.TempDir()
	// Foreground sleeps, as in TestExitZeroAfterStopIsSuccess: a
	// background child forked as the SIGTERM lands could swallow it.
	h := shell(t, `trap 'echo term >> `+dir+`/terms; exit 0' TERM; echo > `+dir+`/ready; while :; do sleep 0.1; done`,
		command.Config{KillGrace: 5 * time.Second})
	ctx := cancelWhenReady(dir + "/ready")
	h.Work(ctx, testJob())
	b, err := os.ReadFile(dir + "/terms")
	require.NoError(t, err)
	require.Equal(t, "term\n", string(b), "the command's SIGTERM trap ran more than once")
}

// cancelWhenReady returns a context cancelled once the command has
// written the file ready (it then runs its trap), or after 30 s.
func cancelWhenReady(ready string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for range 3000 {
			if _, err := os.Stat(ready); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return ctx
}

// After a lost lease the command gets SIGTERM, then SIGKILL ahead of the
// handler's StopBy, however long its kill grace: its cleanup must not run
// on into another worker's run of the job. (The crash suite saw a trap's
// 2 s outlast a 5 s lease's margin, and the job's next run start first.)
func TestLostLeaseEndsTheGraceByStopBy(t *testing.T) {
	dir := t.TempDir()
	h := shell(t, `trap 'echo term >> `+dir+`/log; sleep 10; echo end >> `+dir+`/log; exit 0' TERM; echo > `+dir+`/ready; sleep 60 & wait`,
		command.Config{KillGrace: time.Minute})
	ctx, cancel := context.WithCancelCause(context.Background())
	var stopBy time.Time
	go func() {
		<-cancelWhenReady(dir + "/ready").Done()
		stopBy = time.Now().Add(time.Second)
		cancel(&worker.LeaseLostError{StopBy: stopBy})
	}()
	err := h.Work(ctx, testJob())
	returned := time.Now()
	require.ErrorContains(t, err, "signal 9", "the tree was not killed")
	b, rerr := os.ReadFile(dir + "/log")
	require.NoError(t, rerr, "the command got no SIGTERM first")
	require.Equal(t, "term\n", string(b), "the command's cleanup ran on past StopBy")
	by, ok := sluice.StopBy(ctx)
	require.True(t, ok)
	require.Equal(t, stopBy, by)
	t.Logf("Work returned %s after StopBy", returned.Sub(stopBy).Round(time.Millisecond))
}
