package reaper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/reaper/supervise"
)

type supervisor struct{ cmd *exec.Cmd }

// Supported reports whether Start can supervise a command here.
func Supported() bool { return true }

// Start starts cmd, built by exec.Command and not started, under a
// supervisor that stops it with SIGTERM, then SIGKILL after grace, once
// Stop is called. cmd's SysProcAttr must be nil (the command gets a
// process group of its own), its Stdin, Stdout, Stderr and ExtraFiles
// *os.File or nil; the command gets its ExtraFiles as fds 3 on, as
// exec.Cmd would give them.
func Start(cmd *exec.Cmd, grace time.Duration) (*Process, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil || cmd.SysProcAttr != nil {
		return nil, errors.New("reaper: want an unstarted command without SysProcAttr")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("reaper: create pipe: %w", err)
	}
	sup := &exec.Cmd{
		Path: "/proc/self/exe",
		// The parent's pid: the supervisor checks it is still its parent
		// before it starts the command (see supervise).
		Args: append([]string{supervise.Marker, grace.String(), strconv.Itoa(os.Getpid()),
			strconv.Itoa(len(cmd.ExtraFiles)), cmd.Path}, cmd.Args...),
		Env:    cmd.Env,
		Dir:    cmd.Dir,
		Stdin:  cmd.Stdin,
		Stdout: cmd.Stdout,
		Stderr: cmd.Stderr,
		// Its report pipe is its fd 3, the command's extra files follow.
		ExtraFiles: append([]*os.File{w}, cmd.ExtraFiles...),
		// A group of its own keeps a terminal's ^C away from it, as from
		// the command.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: supervise.ParentDied},
	}
	// The parent-death signal fires when the thread that forked the child
	// exits, not the process: the Go runtime ends a thread only when a
	// goroutine exits while locked to it, which this one does not.
	runtime.LockOSThread()
	err = sup.Start()
	runtime.UnlockOSThread()
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("reaper: start supervisor: %w", err)
	}
	br := bufio.NewReader(r)
	line, _ := br.ReadString('\n')
	if pid, ok := strings.CutPrefix(line, "started "); ok {
		p := &Process{sup: &supervisor{sup}, done: make(chan struct{})}
		if p.Pid, err = strconv.Atoi(strings.TrimSpace(pid)); err == nil {
			go p.await(br, r)
			return p, nil
		}
	}
	r.Close()
	sup.Wait()
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return nil, errors.New(strings.TrimSpace(msg))
	}
	return nil, fmt.Errorf("reaper: supervisor ended without starting the command (%s, said %q)", sup.ProcessState, line)
}

// await reads the command's status once the supervisor has exited.
func (p *Process) await(br *bufio.Reader, r *os.File) {
	defer close(p.done)
	// EOF comes when the supervisor exits: the command does not inherit
	// the pipe.
	rest, _ := io.ReadAll(br)
	r.Close()
	waitErr := p.sup.cmd.Wait()
	var ws uint32
	if _, err := fmt.Sscanf(string(rest), "status %d\n", &ws); err == nil {
		p.status = syscall.WaitStatus(ws)
		return
	}
	p.status = p.sup.cmd.ProcessState.Sys().(syscall.WaitStatus)
	p.err = fmt.Errorf("reaper: the supervisor ended without the command's status: %v", waitErr)
}

// Stop asks the supervisor to stop the command: SIGTERM to its process
// tree, SIGKILL after the grace. Done tells when the tree is gone.
func (p *Process) Stop() {
	// An error means the supervisor has exited already.
	p.sup.cmd.Process.Signal(syscall.SIGTERM)
}

// Kill asks the supervisor to SIGKILL the command's tree now, a stop's
// grace cut short. Done tells when the tree is gone.
func (p *Process) Kill() {
	p.sup.cmd.Process.Signal(supervise.KillNow)
}
