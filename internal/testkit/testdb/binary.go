package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MainWithBinary is a TestMain body for packages that test the real
// `sluice` binary: it builds it once into a temporary directory (or takes
// the one SLUICE_TEST_BINARY names), stores its
// path in *bin, runs the tests and exits with their code. Each cleanup runs
// after the tests, before the exit that t.Cleanup cannot outlive: servers a
// package shares between its tests are stopped there.
func MainWithBinary(m *testing.M, bin *string, cleanups ...func()) {
	dir, err := os.MkdirTemp("", "sluice-bin")
	if err != nil {
		fmt.Fprintf(os.Stderr, "build sluice: %v\n", err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "sluice")
	if given := os.Getenv("SLUICE_TEST_BINARY"); given != "" {
		// A released binary, or one built from an older commit to show
		// that a test fails there.
		*bin = given
		fmt.Fprintf(os.Stderr, "testing the binary %s (SLUICE_TEST_BINARY), not this tree's\n", given)
	} else if out, err := exec.Command("go", "build", "-o", *bin, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sluice: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// MainExclusive is MainWithBinary for a suite that runs apart from the
// others (see Exclusive): it waits for its turn before building.
func MainExclusive(m *testing.M, suite string, bin *string, cleanups ...func()) {
	Exclusive(suite)
	MainWithBinary(m, bin, cleanups...)
}
