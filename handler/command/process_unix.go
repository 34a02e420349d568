//go:build unix

package command

import (
	"context"
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
	tree    tree
	stdin   *os.File // the parent's write end
	outputs []*os.File
	io      sync.WaitGroup
}

// killBy is when a stopped command's tree gets SIGKILL at the latest,
// however long its kill grace: killTime before the handler's StopBy, so
// that after a lost lease it is gone before another worker may start the
// job. Zero when the stop has no such bound.
func killBy(ctx context.Context) time.Time {
	by, ok := sluice.StopBy(ctx)
	if !ok {
		return time.Time{}
	}
	return by.Add(-killTime)
}

// killTime is how long before the handler's StopBy its tree gets SIGKILL:
// time for the signal to land and the supervisor to see the tree gone.
const killTime = 100 * time.Millisecond

// tree is a started command's process tree, as this platform can stop it
// (tree_linux.go, tree_other.go).
type tree interface {
	// exited is closed once the command itself has exited.
	exited() <-chan struct{}
	// stop sends SIGTERM to the whole tree, SIGKILL to what is left after
	// the grace or at by, whichever comes first (a zero by sets no bound),
	// and returns once the tree is gone.
	stop(by time.Time)
	// finish kills what the exited command left behind and returns once
	// it is gone.
	finish()
	// ending is how the command ended, once exited is closed.
	ending() ending
}

// run runs the command to its end. When ctx ends first it stops the
// process tree and reports stopped.
func (h *Handler) run(ctx context.Context, input []byte, job *sluice.Job, stdout, stderr io.Writer) (
	end ending, stopped bool, err error) {
	p, err := h.start(input, job, sluice.TraceParent(ctx), stdout, stderr)
	if err != nil {
		return ending{}, false, err
	}
	stopped = p.wait(ctx)
	return p.tree.ending(), stopped, nil
}

func (h *Handler) start(input []byte, job *sluice.Job, traceParent string, stdout, stderr io.Writer) (*process, error) {
	cmd := exec.Command(h.argv[0], h.argv[1:]...)
	cmd.Dir = h.dir
	// exec keeps the last value of a repeated key, so the job's own
	// variables come last and cannot be overridden.
	cmd.Env = append(append(baseEnv(os.Environ()), h.env...),
		"SLUICE_JOB_ID="+strconv.FormatInt(job.ID, 10),
		"SLUICE_JOB_TYPE="+job.Type,
		"SLUICE_JOB_KEY="+job.Key,
		"SLUICE_JOB_PARTITION="+job.Partition,
		"SLUICE_JOB_ATTEMPT="+strconv.Itoa(job.Attempt),
		"SLUICE_IDEMPOTENCY_KEY="+job.IdempotencyKey(),
		// The command's parent may be a supervisor (tree_linux.go): this
		// names the process that runs the job.
		"SLUICE_WORKER_PID="+strconv.Itoa(os.Getpid()),
		// The W3C name that OpenTelemetry SDKs read for a process's
		// parent; empty when the job is not traced.
		"TRACEPARENT="+traceParent,
		// Where the command may write progress lines (progress.go).
		"SLUICE_PROGRESS_FD="+strconv.Itoa(progressFD),
	)

	// stdin read and write ends, then stdout's, stderr's and the
	// progress pipe's.
	var ends [8]*os.File
	for i := 0; i < len(ends); i += 2 {
		var err error
		if ends[i], ends[i+1], err = os.Pipe(); err != nil {
			closeFiles(ends[:i]...)
			return nil, fmt.Errorf("create pipe: %w", err)
		}
	}
	stdinR, stdinW, outR, outW, errR, errW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]
	progR, progW := ends[6], ends[7]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, errW
	cmd.ExtraFiles = []*os.File{progW} // fd 3, progressFD
	t, err := launch(cmd, h.grace)
	// The child has its copies; the parent's would keep the pipes open.
	closeFiles(stdinR, outW, errW, progW)
	if err != nil {
		closeFiles(stdinW, outR, errR, progR)
		return nil, err
	}

	p := &process{tree: t, stdin: stdinW, outputs: []*os.File{outR, errR, progR}}
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
	p.io.Go(func() {
		readProgress(progR, job)
		progR.Close()
	})
	return p, nil
}

// wait returns once the command has exited, its process tree is gone and
// its output is read. When ctx ends first it stops the tree and reports
// true.
func (p *process) wait(ctx context.Context) (stopped bool) {
	select {
	case <-p.tree.exited():
		p.tree.finish()
	case <-ctx.Done():
		select {
		case <-p.tree.exited(): // it ended on its own as ctx ended
			p.tree.finish()
		default:
			stopped = true
			p.tree.stop(killBy(ctx))
		}
	}
	// Output already written is still read, but a process that escaped
	// the tree holding a pipe must not hold the worker.
	deadline := time.Now().Add(pipeDrainTime)
	for _, f := range p.outputs {
		f.SetReadDeadline(deadline)
	}
	// A stdin write blocked on a child that never reads ends here.
	p.stdin.Close()
	p.io.Wait()
	return stopped
}

// endingOf reads a wait status.
func endingOf(ws syscall.WaitStatus) ending {
	if ws.Signaled() {
		return ending{code: -1, signal: ws.Signal()}
	}
	return ending{code: ws.ExitStatus()}
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
