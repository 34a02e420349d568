//go:build unix

package cli

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// forwardedSignals are caught by `sluice lock` and passed on to CMD.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// parentDeath, where the system has it, asks the kernel to kill CMD when
// sluice dies, since a lock that dies with sluice must not leave CMD running.
var parentDeath func(*syscall.SysProcAttr)

// runLocked runs CMD in its own process group, so that a signal reaches
// every process it starts, and waits for it while passing signals on and
// stopping it when the lock is lost or --timeout passes.
func runLocked(a *app, argv, env []string, o lockOptions, sigs <-chan os.Signal, lost <-chan error) lockRun {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = env
	c.Stdin, c.Stdout, c.Stderr = a.stdin, a.stdout, a.stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if parentDeath != nil {
		parentDeath(c.SysProcAttr)
	}
	if err := c.Start(); err != nil {
		return lockRun{startErr: err}
	}
	pgid := c.Process.Pid
	exited := make(chan struct{})
	go func() {
		c.Wait()
		close(exited)
	}()

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
			res.code = exitStatus(c.ProcessState)
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
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
