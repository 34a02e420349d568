package testdb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exclusive makes the fault and HA suites, and the CLI package's many
// processes, run one at a time, whichever packages `go test ./...`
// schedules together: the suites kill, stall or fail over real servers and
// time recoveries against leases, and two of these packages on one small
// machine starve each other until leases expire for load alone.
// It blocks on an flock of a file in the temporary directory, held until
// the test process exits (TestMain ends in os.Exit, and the exit closes the
// file). Other packages keep running beside the one that holds it.
//
// The lock is the machine's, not the run's: two runs at once (two
// checkouts, or CI beside a developer) also take turns. The wait happens
// before the test binary starts its -timeout alarm, but go test's own
// watchdog counts it, so a long wait is said at once, naming the holder
// the file records, and again each minute: a run killed while it waited
// says so instead of ending in a bare goroutine dump.
func Exclusive(suite string) {
	f, err := lockExclusive(suite, time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exclusive = f // keeps the file, and so the lock, open until exit
}

func lockExclusive(suite string, every time.Duration) (*os.File, error) {
	path := filepath.Join(os.TempDir(), "sluice-exclusive-suites.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: exclusive lock %s: %w", suite, path, err)
	}
	start := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("%s: exclusive lock %s: %w", suite, path, err)
		}
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				fmt.Fprintf(os.Stderr, "%s: waiting %s for the exclusive lock %s, held by %s\n",
					suite, time.Since(start).Round(time.Second), path, holder(path))
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		close(done)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: exclusive lock %s: %w", suite, path, err)
		}
	}
	if waited := time.Since(start); waited > time.Second {
		fmt.Fprintf(os.Stderr, "%s: waited %s for the other fault and HA suites\n", suite, waited.Round(time.Second))
	}
	// Who holds it now, for the next waiter to name.
	wd, _ := os.Getwd()
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%s (pid %d, in %s, since %s)\n", suite, os.Getpid(), wd, time.Now().UTC().Format(time.TimeOnly))
	}
	return f, nil
}

// holder reads the lock file's record of the process holding it.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "a process that did not say"
}

var exclusive *os.File
