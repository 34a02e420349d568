package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/lock"
)

// Exit codes of `sluice lock` besides CMD's own, as timeout(1) has them.
const (
	exitTimeout    = 124
	exitCannotExec = 126
	exitNotFound   = 127
)

type lockOptions struct {
	backend   string
	ttl       time.Duration
	wait      time.Duration
	timeout   time.Duration
	minHold   time.Duration
	killAfter time.Duration
	busyExit  int
}

func (a *app) lockCommand() *cobra.Command {
	var o lockOptions
	cmd := &cobra.Command{
		Use:   "lock NAME [flags] -- CMD [ARGS...]",
		Short: "Run CMD only while holding the exclusive lock NAME",
		Long: `Run CMD only while this process holds the lock NAME, so that a cron job never runs twice at once.

When another process holds NAME, sluice prints who and since when, and exits with --busy-exit
(default 0, so cron sends no mail); --wait waits for the lock first. While CMD runs, the lock is
renewed every ttl/3; if it is lost, CMD is stopped (SIGTERM, then SIGKILL after --kill-after) and
sluice exits 1. SIGINT, SIGTERM and SIGHUP are passed on to CMD, and sluice exits with CMD's code.
--timeout ends CMD the same way and exits 124. CMD runs without a shell, in its own process group,
with SLUICE_LOCK_NAME and, on backends with fencing numbers, SLUICE_LOCK_TOKEN.

Backends: file:DIR (flock; the default is the system temp directory), redis://HOST:PORT/DB,
mysql://USER:PASS@HOST:PORT/DB (GET_LOCK; refused on a Galera node, use ?lease=1), postgres://USER:PASS@HOST:PORT/DB (advisory lock),
sqlite:PATH or any database URL with ?lease=1 (a sluice_leases row with a fencing number).`,
		Example: `  */5 * * * * sluice lock nightly-report -- php think report:build
  sluice lock sync --backend redis://127.0.0.1:6379/0 --ttl 1m --timeout 30m -- ./sync.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, argv, err := lockArgs(cmd, args)
			if err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return a.runLock(cmd.Context(), name, argv, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.backend, "backend", "file:", "lock backend URL")
	f.DurationVar(&o.ttl, "ttl", 5*time.Minute, "how long the lock outlives its last renewal on redis and lease backends; renewed every ttl/3")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long for a busy lock instead of skipping at once")
	f.DurationVar(&o.timeout, "timeout", 0, "stop CMD after this long and exit 124 (0: no limit)")
	f.DurationVar(&o.minHold, "min-hold", 0, "keep the lock at least this long after taking it, so that a node whose clock runs late cannot run the same slot again")
	f.DurationVar(&o.killAfter, "kill-after", 5*time.Second, "after SIGTERM on timeout or a lost lock, wait this long before SIGKILL")
	f.IntVar(&o.busyExit, "busy-exit", 0, "exit code when the lock is busy")
	return cmd
}

// lockArgs splits NAME from the CMD that follows "--". The "--" is
// required so that CMD's own flags are never read as sluice's.
func lockArgs(cmd *cobra.Command, args []string) (string, []string, error) {
	dash := cmd.ArgsLenAtDash()
	switch {
	case len(args) == 0:
		return "", nil, usagef("lock: missing NAME; usage: sluice lock NAME [flags] -- CMD [ARGS...]")
	case dash < 0:
		return "", nil, usagef("lock: missing -- before CMD; usage: sluice lock NAME [flags] -- CMD [ARGS...]")
	case dash == 0:
		return "", nil, usagef("lock: missing NAME before --; usage: sluice lock NAME [flags] -- CMD [ARGS...]")
	case dash > 1:
		return "", nil, usagef("lock: one NAME expected before --, got %d arguments", dash)
	case len(args) == dash:
		return "", nil, usagef("lock: missing CMD after --")
	}
	if args[0] == "" {
		return "", nil, usagef("lock: missing NAME; usage: sluice lock NAME [flags] -- CMD [ARGS...]")
	}
	if err := lock.CheckName(args[0]); err != nil {
		return "", nil, usagef("lock: %v", err)
	}
	return args[0], args[dash:], nil
}

func (o lockOptions) validate() error {
	switch {
	case o.ttl < time.Second:
		return usagef("lock: --ttl %s: at least 1s", o.ttl)
	case o.wait < 0:
		return usagef("lock: --wait %s: must not be negative", o.wait)
	case o.timeout < 0:
		return usagef("lock: --timeout %s: must not be negative", o.timeout)
	case o.minHold < 0:
		return usagef("lock: --min-hold %s: must not be negative", o.minHold)
	case o.killAfter < 0:
		return usagef("lock: --kill-after %s: must not be negative", o.killAfter)
	case o.busyExit < 0 || o.busyExit > 255:
		return usagef("lock: --busy-exit %d: want 0 to 255", o.busyExit)
	}
	return nil
}

// lockExit prints one "sluice lock: ..." line and ends with code.
func (a *app) lockExit(code int, format string, args ...any) error {
	fmt.Fprintln(a.stderr, "sluice lock: "+oneLine(fmt.Sprintf(format, args...)))
	return &exitError{code: code}
}

func (a *app) runLock(ctx context.Context, name string, argv []string, o lockOptions) error {
	// From here the signals are ours: they end a wait for the lock, and
	// once CMD runs they are passed on to it. The root command cancels
	// ctx on SIGINT and SIGTERM, which would cut the release short.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	ctx = context.WithoutCancel(ctx)

	lk, err := lock.Open(o.backend, lock.Options{Prefix: a.prefix})
	if err != nil {
		if errors.Is(err, lock.ErrBadURL) || errors.Is(err, dburl.ErrBadScheme) || errors.Is(err, lock.ErrPooler) || errors.Is(err, lock.ErrGalera) {
			return &usageError{"lock: --backend: " + err.Error()}
		}
		return a.lockExit(exitRuntime, "%s: %v", name, err)
	}
	defer lk.Close()

	lease, holder, sig, err := acquireLock(ctx, lk, name, o, sigs)
	switch {
	case err != nil:
		return a.lockExit(exitRuntime, "%s: %v", name, err)
	case sig != nil:
		return a.lockExit(signalExit(sig), "%s: %s while waiting for the lock", name, sig)
	case lease == nil:
		return a.lockExit(o.busyExit, "%s is held by %s; skipped", name, holder)
	}
	acquired := time.Now()

	keepCtx, stopKeep := context.WithCancel(ctx)
	defer stopKeep()
	// Renewal gives up early enough that CMD is stopped, SIGKILL included,
	// before a lease it could not renew lapses and another holder starts.
	lost := lock.Keep(keepCtx, lease, o.ttl, min(o.killAfter+time.Second, o.ttl/2))
	env := lockEnv(os.Environ(), name, lease.Fence())
	res := runLocked(a, argv, env, o, sigs, lost)

	switch {
	case res.startErr != nil:
		a.release(ctx, name, lease)
		code := exitCannotExec
		if errors.Is(res.startErr, os.ErrNotExist) || errors.Is(res.startErr, exec.ErrNotFound) {
			code = exitNotFound
		}
		return a.lockExit(code, "%s: %v", name, res.startErr)
	case res.lost != nil:
		// Released so that a session backend closes its connection; the
		// error would only report the loss again.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lease.Release(rctx)
		cancel()
		return a.lockExit(exitRuntime, "%s: %v; CMD was stopped", name, res.lost)
	}

	if rest := o.minHold - time.Since(acquired); rest > 0 {
		if err := a.holdAtLeast(ctx, name, lease, rest, stopKeep, lost, sigs); err != nil {
			return err
		}
	} else {
		stopKeep()
		a.release(ctx, name, lease)
	}
	if res.timedOut {
		return a.lockExit(exitTimeout, "%s: CMD timed out after %s", name, o.timeout)
	}
	return &exitError{code: res.code}
}

// acquireLock tries the lock until it is taken or --wait has passed,
// polling with a growing, jittered delay. A signal ends the wait.
func acquireLock(ctx context.Context, lk lock.Locker, name string, o lockOptions, sigs <-chan os.Signal) (lock.Lease, lock.Holder, os.Signal, error) {
	deadline := time.Now().Add(o.wait)
	delay := 50 * time.Millisecond
	for {
		lease, holder, err := lk.TryAcquire(ctx, name, o.ttl)
		if err != nil || lease != nil {
			return lease, holder, nil, err
		}
		rest := time.Until(deadline)
		if rest <= 0 {
			return nil, holder, nil, nil
		}
		// Jitter keeps waiters that started together from polling together.
		d := min(delay/2+rand.N(delay), rest)
		delay = min(2*delay, 500*time.Millisecond)
		select {
		case s := <-sigs:
			return nil, holder, s, nil
		case <-time.After(d):
		}
	}
}

// holdAtLeast keeps the lock for rest more after CMD has finished. A lease
// that lapses by itself is set to lapse then, so sluice need not stay; a
// session lock is kept by staying, renewed, until then or a signal.
func (a *app) holdAtLeast(ctx context.Context, name string, lease lock.Lease, rest time.Duration, stopKeep func(), lost <-chan error, sigs <-chan os.Signal) error {
	if e, ok := lease.(lock.Expirer); ok {
		stopKeep()
		if err := e.ReleaseAfter(ctx, rest); err != nil {
			fmt.Fprintf(a.stderr, "sluice lock: %s: keeping the lock for --min-hold: %v\n", name, oneLine(err.Error()))
		}
		return nil
	}
	t := time.NewTimer(rest)
	defer t.Stop()
	select {
	case <-t.C:
	case <-sigs:
	case err := <-lost:
		fmt.Fprintf(a.stderr, "sluice lock: %s: lost during --min-hold: %v\n", name, oneLine(err.Error()))
	}
	stopKeep()
	a.release(ctx, name, lease)
	return nil
}

// release gives the lock up, bounded so that an unreachable backend does
// not hold the exit; the lock then ends by its ttl or with the session.
func (a *app) release(ctx context.Context, name string, lease lock.Lease) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		fmt.Fprintf(a.stderr, "sluice lock: %s: release: %v\n", name, oneLine(err.Error()))
	}
}

// lockEnv is the environment for CMD. Values inherited from an outer
// `sluice lock` are dropped, so CMD never sees another lock's token.
func lockEnv(environ []string, name string, fence int64) []string {
	env := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "SLUICE_LOCK_NAME=") || strings.HasPrefix(kv, "SLUICE_LOCK_TOKEN=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SLUICE_LOCK_NAME="+name)
	if fence > 0 {
		env = append(env, "SLUICE_LOCK_TOKEN="+strconv.FormatInt(fence, 10))
	}
	return env
}

// signalExit is the shell's code for death by a signal.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitRuntime
}

// lockRun is how CMD ended.
type lockRun struct {
	code     int   // CMD's exit code, 128+N if a signal ended it
	timedOut bool  // --timeout stopped it
	lost     error // the lock was lost and CMD stopped
	startErr error // CMD could not be started
}
