package testdb

import (
	"fmt"
	"os"
	"path/filepath"
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
func Exclusive(suite string) {
	f, err := lockExclusive(suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exclusive = f // keeps the file, and so the lock, open until exit
}

func lockExclusive(suite string) (*os.File, error) {
	path := filepath.Join(os.TempDir(), "sluice-exclusive-suites.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: exclusive lock %s: %w", suite, path, err)
	}
	start := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: exclusive lock %s: %w", suite, path, err)
	}
	if waited := time.Since(start); waited > time.Second {
		fmt.Fprintf(os.Stderr, "%s: waited %s for the other fault and HA suites\n", suite, waited.Round(time.Second))
	}
	return f, nil
}

var exclusive *os.File
