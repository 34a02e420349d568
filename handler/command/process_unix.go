//go:build unix

package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice"
)

// process is one running command with the goroutines that feed and drain
// its pipes. The pipes are the handler's own rather than os/exec's, so
// that waiting for the process does not also wait for grandchildren that
// inherited them.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File // the parent's write end
	outputs []*os.File
	io      sync.WaitGroup
	exited  chan struct{}
}

// run runs the command to its end. When ctx ends first it stops the
// process group and reports stopped.
func (h *Handler) run(ctx context.Context, input []byte, job *sluice.Job, stdout, stderr io.Writer) (
	state *os.ProcessState, stopped bool, err error) {
	p, err := h.start(input, job, sluice.TraceParent(ctx), stdout, stderr)
	if err != nil {
		return nil, false, err
	}
	stopped = p.wait(ctx, h.grace)
	return p.cmd.ProcessState, stopped, nil
}

func (h *Handler) start(input []byte, job *sluice.Job, traceParent string, stdout, stderr io.Writer) (*process, error) {
	cmd := exec.Command(h.argv[0], h.argv[1:]...)
	cmd.Dir = h.dir
	// exec keeps the last value of a repeated key, so the job's own
	// variables come last and cannot be overridden.
	cmd.Env = append(append(os.Environ(), h.env...),
		"SLUICE_JOB_ID="+strconv.FormatInt(job.ID, 10),
		"SLUICE_JOB_TYPE="+job.Type,
		"SLUICE_JOB_KEY="+job.Key,
		"SLUICE_JOB_PARTITION="+job.Partition,
		"SLUICE_JOB_ATTEMPT="+strconv.Itoa(job.Attempt),
		"SLUICE_IDEMPOTENCY_KEY="+job.IdempotencyKey(),
		// The W3C name that OpenTelemetry SDKs read for a process's
		// parent; empty when the job is not traced.
		"TRACEPARENT="+traceParent,
	)
	// Its own group, so one signal reaches every process it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// stdin read and write ends, then stdout's, then stderr's.
	var ends [6]*os.File
	for i := 0; i < len(ends); i += 2 {
		var err error
		if ends[i], ends[i+1], err = os.Pipe(); err != nil {
			closeFiles(ends[:i]...)
			return nil, fmt.Errorf("create pipe: %w", err)
		}
	}
	stdinR, stdinW, outR, outW, errR, errW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, errW
	err := cmd.Start()
	// The child has its copies; the parent's would keep the pipes open.
	closeFiles(stdinR, outW, errW)
	if err != nil {
		closeFiles(stdinW, outR, errR)
		return nil, err
	}

	p := &process{cmd: cmd, stdin: stdinW, outputs: []*os.File{outR, errR}, exited: make(chan struct{})}
	p.io.Go(func() {
		// A command that does not read its input closes the pipe; that
		// EPIPE is not a failure of the job.
		p.stdin.Write(input)
		p.stdin.Close()
	})
	for i, w := range []io.Writer{stdout, stderr} {
		r := p.outputs[i]
		p.io.Go(func() {
			io.Copy(w, r)
			r.Close()
		})
	}
	go func() {
		// Wait has no I/O of its own to wait for, since every stdio is an
		// *os.File: it returns as soon as the leader exits.
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// wait returns once the command has exited and its output is read. When
// ctx ends first it stops the process group and reports true.
func (p *process) wait(ctx context.Context, grace time.Duration) (stopped bool) {
	pgid := p.cmd.Process.Pid
	select {
	case <-p.exited:
	case <-ctx.Done():
		select {
		case <-p.exited: // it ended on its own as ctx ended
		default:
			stopped = true
			p.stopGroup(pgid, grace)
		}
	}
	// The job is over: whatever is left in its group was orphaned by it.
	// An empty group finds nothing: its id goes back to the kernel only
	// after the leader is reaped, and pids are handed out in sequence, so
	// it is not reused within this instant.
	syscall.Kill(-pgid, syscall.SIGKILL)
	// Output already written is still read, but a process outside the
	// group holding a pipe must not hold the worker.
	deadline := time.Now().Add(pipeDrainTime)
	for _, f := range p.outputs {
		f.SetReadDeadline(deadline)
	}
	// A stdin write blocked on a child that never reads ends here.
	p.stdin.Close()
	p.io.Wait()
	return stopped
}

// stopGroup sends SIGTERM to the group and waits until the leader has
// exited and the group is empty, or until grace has passed, then sends
// SIGKILL to whatever is left.
func (p *process) stopGroup(pgid int, grace time.Duration) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	// A stopped process would hold SIGTERM pending until it resumes.
	syscall.Kill(-pgid, syscall.SIGCONT)
	kill := time.NewTimer(grace)
	defer kill.Stop()
	// The group has no exit notification of its own, so once the leader
	// is gone the rest of the group is polled. A zombie still counts as a
	// member until its adoptive parent reaps it; under an init that never
	// reaps, this waits out the grace.
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	leaderGone := p.exited
	for {
		select {
		case <-kill.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
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

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
