// Package reaper runs a command under a small supervisor process so that
// the command's whole process tree dies with the process that started it,
// even when that one is killed with SIGKILL (Linux only; see Supported).
//
// The supervisor is the running binary itself, re-executed from
// /proc/self/exe under a marker argv[0]: the init of its package
// supervise (kept apart so that it runs among the first inits) takes the
// process over before main runs, so every binary that links the package
// (the sluice binary, and a Go program using handler/command) can act as
// its own supervisor without a separate program to install. The
// supervisor
//   - gets a parent-death signal, so it learns of its parent's death, and
//     starts the command only once it has checked that its parent, whose
//     pid it is given, is still alive: a death before then sends a signal
//     that may be ignored (SIGHUP under nohup), and the command would run
//     on unsupervised;
//   - is a child subreaper, so every descendant the command orphans is
//     reparented to it rather than to init, and stays in reach,
//   - starts the command in a process group of its own, and reports the
//     command's pid and, at the end, its wait status over a pipe;
//   - on SIGTERM (a stop asked for by its parent) sends SIGTERM to the
//     group and to every descendant that left it (each process gets one),
//     waits until they are gone or the grace has passed, then SIGKILLs
//     what is left (at once, when its parent asks with Kill);
//   - on its parent's death SIGKILLs the tree at once: nobody is left to
//     record the command's outcome, and its job's lease will pass on, so
//     letting it run on could only make it overlap its next run;
//   - once the command's leader has exited, SIGKILLs what it left behind;
//   - exits only when it has no descendant left.
package reaper

import (
	"errors"
	"syscall"
)

// Process is a command running under its supervisor.
type Process struct {
	// Pid is the command's pid, also its process group's id.
	Pid int

	sup    *supervisor
	done   chan struct{}
	status syscall.WaitStatus
	err    error
}

// Done is closed once the supervisor has exited, which it does only once
// the command's whole process tree is gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// Status is the command's wait status, once Done is closed. Err says why
// it is unknown, when the supervisor itself died without reporting it.
func (p *Process) Status() (syscall.WaitStatus, error) { return p.status, p.err }

// ErrUnsupported is Start's error where no supervisor can run.
var ErrUnsupported = errors.New("reaper: process supervision needs Linux")
