//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// forwardedSignals are caught by `sluice lock` and passed on to CMD.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// startCMD starts CMD in a process group of its own, so that a signal
// reaches every process it starts, and returns the group's id, a channel
// closed once CMD is gone, and its exit code then (or why it is unknown).
// On Linux it runs under a supervisor (lock_linux.go), so that its whole
// tree dies with sluice.
var startCMD = startInGroup

// startInGroup is startCMD without a supervisor: a CMD that outlives a
// killed sluice runs on without the lock (docs/deploy.md).
func startInGroup(c *exec.Cmd, _ time.Duration) (int, <-chan struct{}, func() (int, error), error) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return 0, nil, nil, err
	}
	exited := make(chan struct{})
	go func() {
		c.Wait()
		close(exited)
	}()
	return c.Process.Pid, exited, func() (int, error) { return exitStatus(c.ProcessState), nil }, nil
}

// runLocked runs CMD and waits for it while passing signals on and
// stopping it when the lock is lost or --timeout passes.
func runLocked(a *app, argv, env []string, o lockOptions, sigs <-chan os.Signal, lost <-chan error) lockRun {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = env
	c.Stdin, c.Stdout, c.Stderr = a.stdin, a.stdout, a.stderr
	pgid, exited, code, err := startCMD(c, o.killAfter)
	if err != nil {
		return lockRun{startErr: err}
	}

	var res lockRun
	var timeout, kill <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timeout = t.C
	}
	stopping := false
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		syscall.Kill(-pgid, syscall.SIGTERM)
		// A stopped process would hold SIGTERM pending until it resumes.
		syscall.Kill(-pgid, syscall.SIGCONT)
		kill = time.After(o.killAfter)
	}
	for {
		select {
		case <-exited:
			// Whatever is left in the group was orphaned by CMD and would
			// run on without the lock. The group's id is not reused while
			// this instant lasts: it goes back to the kernel only once the
			// leader is reaped, and pids are handed out in sequence.
			syscall.Kill(-pgid, syscall.SIGKILL)
			var err error
			if res.code, err = code(); err != nil {
				fmt.Fprintf(a.stderr, "sluice lock: CMD's exit status is unknown: %v\n", err)
			}
			return res
		case s := <-sigs:
			if n, ok := s.(syscall.Signal); ok {
				syscall.Kill(-pgid, n)
			}
		case err := <-lost:
			res.lost, lost = err, nil
			stop()
		case <-timeout:
			res.timedOut, timeout = true, nil
			stop()
		case <-kill:
			kill = nil
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// exitStatus is CMD's exit code, or 128+N when signal N ended it, as a
// shell reports it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return waitCode(ws)
	}
	return ps.ExitCode()
}

// waitCode is exitStatus for a wait status.
func waitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
