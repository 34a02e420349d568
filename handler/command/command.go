// Package command runs sluice jobs as child processes, per docs/reference.md "Handler protocol":
// the argv runs directly with no shell, in its own
// process group, reads the job as JSON on stdin, and its exit code decides
// the outcome. On a timeout or cancellation the whole tree gets SIGTERM,
// then SIGKILL after a grace period, and Work returns once it is gone, so
// no grandchild outlives its job. On Linux the command runs under a
// supervisor (internal/reaper) that also kills its tree, including
// processes that left its group, when the process running Work dies.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/attemptlog"
	"github.com/sluicehq/sluice/sluicetype"
)

// Defaults (docs/reference.md "Handler protocol").
const (
	// DefaultKillGrace is how long a process group has between SIGTERM
	// and SIGKILL, unless Config.KillGrace says less.
	DefaultKillGrace = sluicetype.MaxKillGrace
	// ExitDataErr is EX_DATAERR from sysexits.h, the default permanent
	// exit code: the input is bad and running it again will not help.
	ExitDataErr = 65
)

// Output kept per run: stdout becomes the job's result, stderr its error;
// both, interleaved, become the attempt's log (log.go).
const (
	maxStdout = sluicetype.MaxResultLen
	maxStderr = sluicetype.MaxErrorLen
)

// pipeDrainTime bounds how long output is still read after the process
// group is gone. Only a process that left the group (setsid, a daemon)
// can hold the pipes open past that, and it must not hold the worker.
const pipeDrainTime = time.Second

// Config configures a command handler.
type Config struct {
	// Argv is the program and its arguments; Argv[0] is looked up in PATH
	// when it has no slash. No shell is involved.
	Argv []string
	// Timeout ends the command; zero leaves it to the caller's context
	// (a sluice job type's Timeout).
	Timeout time.Duration
	// PermanentExitCodes fail the job at once. Nil means [65]; an empty,
	// non-nil slice makes every non-zero exit transient.
	PermanentExitCodes []int
	// KillGrace is the time between SIGTERM and SIGKILL; zero means
	// DefaultKillGrace. The config file allows at most
	// sluicetype.MaxKillGrace: a client's shutdown waits 15 s
	// (worker.DefaultGrace) for stopped handlers, then hands their jobs
	// back, so a command with a longer grace may still run then.
	KillGrace time.Duration
	// Env holds KEY=VALUE entries for the command besides the few it
	// inherits (BaseEnv). They override those but not the SLUICE_JOB_*
	// variables.
	Env []string
	// Dir is the working directory; empty means the parent's.
	Dir string
}

// BaseEnv names what a command inherits of its parent's environment: what
// programs need to run at all, nothing of sluice's own (its API tokens,
// webhook secrets, database URL). The rest of a command's environment is
// Config.Env and the job's own variables (docs/http-api.md "Handler
// protocol"). LC_* covers every locale category.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR"}

// baseEnv keeps the entries of environ that BaseEnv names.
func baseEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		for _, name := range BaseEnv {
			if p, ok := strings.CutSuffix(name, "*"); ok && strings.HasPrefix(k, p) || k == name {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// Handler runs jobs as one command. It is safe for concurrent use.
type Handler struct {
	argv      []string
	timeout   time.Duration
	permanent []int
	grace     time.Duration
	env       []string
	dir       string
}

var _ sluice.Handler = (*Handler)(nil)

// New checks cfg and builds a handler. It does not look the program up:
// a process that only enqueues may not have it installed.
func New(cfg Config) (*Handler, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("command: empty argv: want the program and its arguments")
	}
	if cfg.Timeout < 0 || cfg.KillGrace < 0 {
		return nil, errors.New("command: timeout and kill grace must not be negative")
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("command: environment entry %q: want KEY=VALUE", kv)
		}
	}
	h := &Handler{argv: slices.Clone(cfg.Argv), timeout: cfg.Timeout, permanent: slices.Clone(cfg.PermanentExitCodes),
		grace: cfg.KillGrace, env: slices.Clone(cfg.Env), dir: cfg.Dir}
	if cfg.PermanentExitCodes == nil {
		h.permanent = []int{ExitDataErr}
	}
	if h.grace == 0 {
		h.grace = DefaultKillGrace
	}
	return h, nil
}

// Work runs the command for job and classifies how it ended.
func (h *Handler) Work(ctx context.Context, job *sluice.Job) error {
	input, err := webhook.Encode(job)
	if err != nil {
		return sluice.Permanent(err)
	}
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	stdout, stderr, log := attemptlog.NewTail(maxStdout), attemptlog.NewTail(maxStderr), attemptlog.New()
	start := time.Now()
	end, stopped, err := h.run(ctx, input, job, io.MultiWriter(stdout, log), io.MultiWriter(stderr, log))
	if text, total, omitted := log.Log(); total > 0 {
		// Whatever the outcome: a failed attempt's output is what its
		// log is for. An attempt that wrote nothing stores nothing.
		job.SetLog(text, total, omitted)
	}
	if err != nil {
		// A missing program may be deployed before the next attempt.
		return fmt.Errorf("command %s: %w", h.argv[0], err)
	}
	if code := end.code; code >= 0 {
		// -1 is a signal, which howEnded names.
		job.SetExitCode(code)
	}
	errText := strings.TrimSpace(stderr.String())
	switch {
	case end.code == 0:
		// Even after a stop: the command finished, or says it did. A run
		// that ends on its own just as a deadline passes lands here too,
		// whichever of the two the wait saw first, and must not be run
		// again.
		job.SetResult(strings.ToValidUTF8(stdout.String(), "\uFFFD"))
		return nil
	case stopped:
		return withStderr(fmt.Errorf("command %s: stopped after %s: %w; %s", h.argv[0], time.Since(start).Round(time.Millisecond),
			ctx.Err(), end), errText)
	case slices.Contains(h.permanent, end.code):
		return sluice.Permanent(withStderr(fmt.Errorf("command %s: %s", h.argv[0], end), errText))
	}
	return withStderr(fmt.Errorf("command %s: %s", h.argv[0], end), errText)
}

// ending is how a command's process ended.
type ending struct {
	code   int            // its exit code, or -1 when a signal ended it
	signal syscall.Signal // the signal, when one ended it
}

// String describes how the process ended.
func (e ending) String() string {
	if e.code < 0 {
		return fmt.Sprintf("ended by signal %d (%s)", int(e.signal), e.signal)
	}
	return "exit code " + strconv.Itoa(e.code)
}

// withStderr adds the stderr tail to err as its detail: the job's
// last_error keeps it, but logs show it only at debug level, since a
// command may well print the payload it was given.
func withStderr(err error, stderr string) error {
	if stderr == "" {
		return fmt.Errorf("%w (no stderr output)", err)
	}
	return &sluice.DetailError{Err: err, Detail: strings.ToValidUTF8(stderr, "\uFFFD")}
}
