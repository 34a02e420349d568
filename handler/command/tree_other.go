//go:build unix && !linux

package command

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// launch starts cmd in a process group of its own, so that one signal
// reaches every process it starts. Without Linux's parent-death signal
// and subreapers, a process that leaves the group, or outlives a worker
// killed by SIGKILL, escapes (docs/deploy.md).
func launch(cmd *exec.Cmd, grace time.Duration) (tree, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &group{cmd: cmd, grace: grace, done: make(chan struct{})}
	go func() {
		// Wait has no I/O of its own to wait for, since every stdio is an
		// *os.File: it returns as soon as the leader exits.
		cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// group is a command's process group.
type group struct {
	cmd   *exec.Cmd
	grace time.Duration
	done  chan struct{}
}

func (g *group) exited() <-chan struct{} { return g.done }

func (g *group) ending() ending {
	return endingOf(g.cmd.ProcessState.Sys().(syscall.WaitStatus))
}

// finish kills whatever is left in the group: the job is over, so it was
// orphaned by it. An empty group finds nothing: its id goes back to the
// kernel only after the leader is reaped, and pids are handed out in
// sequence, so it is not reused within this instant.
func (g *group) finish() {
	syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
}

// stop sends SIGTERM to the group and waits until the leader has exited
// and the group is empty, or until grace has passed or by has come, then
// sends SIGKILL to whatever is left.
func (g *group) stop(by time.Time) {
	pgid := g.cmd.Process.Pid
	defer g.finish()
	syscall.Kill(-pgid, syscall.SIGTERM)
	// A stopped process would hold SIGTERM pending until it resumes.
	syscall.Kill(-pgid, syscall.SIGCONT)
	grace := g.grace
	if !by.IsZero() {
		grace = min(grace, time.Until(by))
	}
	kill := time.NewTimer(grace)
	defer kill.Stop()
	// The group has no exit notification of its own, so once the leader
	// is gone the rest of the group is polled. A zombie still counts as a
	// member until its adoptive parent reaps it; under an init that never
	// reaps, this waits out the grace.
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	leaderGone := g.done
	for {
		select {
		case <-kill.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-g.done
			return
		case <-leaderGone:
			leaderGone = nil
			if groupGone(pgid) {
				return
			}
		case <-poll.C:
			if leaderGone == nil && groupGone(pgid) {
				return
			}
		}
	}
}

// groupGone reports whether no process is left in the group.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
