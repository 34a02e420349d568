package command

import (
	"os/exec"
	"time"

	"github.com/sluicehq/sluice/internal/reaper"
)

// launch starts cmd under a supervisor (internal/reaper), which puts it in
// a process group of its own, keeps every process it starts within reach
// as a child subreaper, and kills all of them when this process dies, even
// by SIGKILL: a job's command never outlives the worker that ran it.
func launch(cmd *exec.Cmd, grace time.Duration) (tree, error) {
	p, err := reaper.Start(cmd, grace)
	if err != nil {
		return nil, err
	}
	return supervised{p}, nil
}

// supervised is a command under its supervisor, which exits only once the
// command's whole tree is gone: it kills what an exited command left
// behind by itself.
type supervised struct{ p *reaper.Process }

func (s supervised) exited() <-chan struct{} { return s.p.Done() }

func (s supervised) stop(by time.Time) {
	s.p.Stop()
	if !by.IsZero() {
		kill := time.NewTimer(time.Until(by))
		defer kill.Stop()
		select {
		case <-s.p.Done():
		case <-kill.C:
			s.p.Kill()
		}
	}
	<-s.p.Done()
}

func (s supervised) finish() {}

func (s supervised) ending() ending {
	ws, _ := s.p.Status()
	return endingOf(ws)
}
