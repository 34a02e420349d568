// Package supervise is the supervisor process of package reaper: the
// running binary re-executed under the argv[0] Marker, whose init takes the
// process over before main runs (see reaper's package comment for what the
// supervisor does).
//
// It is a package of its own, importing only a few packages of the
// standard library and nothing that formats or parses beyond strconv, so
// that Go initializes it among the first packages of a large binary: an
// init runs only once every package it imports has, and its turn among
// the ready ones comes in import-path order. Inside package reaper, which
// imports os/exec, the takeover waited for nearly every package of the
// sluice binary to initialize first (about 30 of the 45 ms of CPU a
// command job's supervisor cost, measured on 2 cores).
package supervise

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func init() {
	if len(os.Args) > 0 && os.Args[0] == Marker {
		os.Exit(supervise(os.Args[1:]))
	}
}

// Marker is the supervisor's argv[0]: `ps` shows it, and init looks for it.
const Marker = "sluice-command-supervisor"

// ParentDied is the supervisor's parent-death signal.
const ParentDied = syscall.SIGHUP

// KillNow asks the supervisor to SIGKILL the tree at once (reaper's
// Process.Kill).
const KillNow = syscall.SIGUSR1

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from linux/prctl.h.
const prSetChildSubreaper = 36

// supervise is the supervisor's main: args are the grace, its parent's
// pid, the number of extra files, the command's path and its argv. Its
// fd 3 is the report pipe; the extra files, from its fd 4 on, become the
// command's fds 3 on (the command handler's progress pipe).
func supervise(args []string) int {
	report := os.NewFile(3, "report")
	syscall.CloseOnExec(3)
	fail := func(err error) int {
		report.WriteString("error " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
		return 125
	}
	if len(args) < 5 {
		return fail(errors.New("reaper: supervisor: want the grace, the parent's pid, the extra files, the path and the argv"))
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil {
		return fail(errors.New("reaper: supervisor: grace: " + err.Error()))
	}
	ppid, err := strconv.Atoi(args[1])
	if err != nil {
		return fail(errors.New("reaper: supervisor: parent's pid: " + err.Error()))
	}
	extra, err := strconv.Atoi(args[2])
	if err != nil || extra < 0 {
		return fail(errors.New("reaper: supervisor: extra files: want a count, got " + strconv.Quote(args[2])))
	}
	files := []uintptr{0, 1, 2}
	for fd := 4; fd < 4+extra; fd++ {
		files = append(files, uintptr(fd))
	}
	args = args[2:]
	// Before the command starts, so that no stop request is missed.
	// Two channels: the signal package drops a signal whose channel is
	// full, and a burst of SIGCHLD from a command's children must never
	// crowd out the parent-death or stop signal. One pending SIGCHLD is
	// enough, as each wake-up reaps every child that exited.
	ctl := make(chan os.Signal, 4)
	signal.Notify(ctl, syscall.SIGTERM, ParentDied, KillNow)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	// The parent may have died before the parent-death signal was caught
	// here, and that signal does not always end this process by itself:
	// SIGHUP is inherited ignored under nohup (CI saw a killed worker's
	// command start late and run on to its end). Its pid, given by the
	// parent, tells: from here on the signal or the parent check in watch
	// sees a death.
	if os.Getppid() != ppid {
		return fail(errors.New("reaper: supervisor: the process that started it (pid " + strconv.Itoa(ppid) + ") is gone; the command was not started"))
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fail(errors.New("reaper: supervisor: PR_SET_CHILD_SUBREAPER: " + e.Error()))
	}
	pid, err := syscall.ForkExec(args[1], args[2:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fail(&os.PathError{Op: "fork/exec", Path: args[1], Err: err})
	}
	// The command has its copies of the pipes; holding them here would
	// keep its parent's writes and reads from ending when it exits.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := range 3 {
			syscall.Dup3(int(null.Fd()), fd, 0)
		}
		null.Close()
	}
	for _, fd := range files[3:] {
		syscall.Close(int(fd))
	}
	report.WriteString("started " + strconv.Itoa(pid) + "\n")
	status := watch(pid, ppid, grace, ctl, chld)
	report.WriteString("status " + strconv.FormatUint(uint64(uint32(status)), 10) + "\n")
	return 0
}

// watch reaps the tree of the command pid until none of it is left and
// returns the command's wait status.
func watch(pid, ppid int, grace time.Duration, ctl, chld <-chan os.Signal) syscall.WaitStatus {
	var (
		status     syscall.WaitStatus
		leaderDone bool
		stopping   bool // SIGTERM sent, the grace running
		killing    bool // SIGKILL whatever is left
		graceEnd   <-chan time.Time
		poll       <-chan time.Time
	)
	parentCheck := time.NewTicker(parentCheckEvery)
	defer parentCheck.Stop()
	startPolling := func() {
		if poll == nil {
			poll = time.NewTicker(pollEvery).C
		}
	}
	for {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if errors.Is(err, syscall.ECHILD) {
				// No child left means no descendant left: an orphan is
				// reparented here before its parent becomes a zombie.
				return status
			}
			if err != nil || wpid == 0 {
				break
			}
			if wpid == pid {
				status, leaderDone = ws, true
			}
		}
		if leaderDone && !stopping {
			// The job is over: what is left was orphaned by it.
			killing = true
		}
		if os.Getppid() != ppid {
			// The parent died: a second look besides its signal, which
			// the kernel sends once.
			killing = true
		}
		if killing {
			killTree(pid, leaderDone)
			startPolling()
		}
		select {
		case s := <-ctl:
			switch {
			case s == ParentDied || s == KillNow:
				killing = true
			case s == syscall.SIGTERM && !stopping && !killing:
				stopping = true
				termTree(pid)
				graceEnd = time.After(grace)
				startPolling()
			}
		case <-chld:
		case <-poll:
		case <-parentCheck.C:
		case <-graceEnd:
			killing = true
		}
	}
}

// termTree sends SIGTERM to the command's group and to every descendant
// of this process that left it, and SIGCONT, since a stopped process
// would hold SIGTERM pending until it resumed. A member of the group gets
// one SIGTERM: a command that traps it must not run its handler twice.
func termTree(pgid int) {
	var ds []int
	for _, d := range descendants() {
		if g, err := syscall.Getpgid(d); err != nil || g != pgid {
			ds = append(ds, d)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGCONT} {
		syscall.Kill(-pgid, sig)
		for _, d := range ds {
			syscall.Kill(d, sig)
		}
	}
}

// killTree sends SIGKILL to the command's group while its leader is not
// yet reaped (until then its id cannot name another group) and to this
// process's own children, which no one else reaps, so that a pid cannot
// have been handed to another process in between. Their children are
// reparented here as they die, and get theirs in the next round.
func killTree(pgid int, leaderReaped bool) {
	if !leaderReaped {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	self := os.Getpid()
	for pid, ppid := range processes() {
		if ppid == self {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// descendants lists the pids below this process.
func descendants() []int {
	children := map[int][]int{}
	for pid, ppid := range processes() {
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	next := []int{os.Getpid()}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		out = append(out, children[p]...)
		next = append(next, children[p]...)
	}
	return out
}

// processes maps every pid in /proc to its parent's pid.
func processes() map[int]int {
	out := map[int]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = ppid
		}
	}
	return out
}

// parentCheckEvery paces the supervisor's look at its parent's pid, the
// fallback should the parent-death signal be lost: a command outlives a
// dead sluice by at most this much plus its kill.
const parentCheckEvery = 500 * time.Millisecond

// pollEvery is how often the supervisor looks for the tree's members
// while it waits for them to go, since only its own children tell it when
// they exit.
const pollEvery = 20 * time.Millisecond
