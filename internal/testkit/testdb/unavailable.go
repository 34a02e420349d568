package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Unavailable skips a test of suite whose environment (a binary, a
// throwaway server, a mount) cannot be set up here, loudly, or fails it
// when SLUICE_TEST_REQUIRE_ALL=1, as CI sets it. err and out, the failed
// command's output, may be nil.
func Unavailable(t testing.TB, suite, what string, err error, out []byte) {
	t.Helper()
	msg := what
	if err != nil {
		msg += fmt.Sprintf(": %v", err)
	}
	if len(out) > 0 {
		msg += "\n" + string(out)
	}
	if RequireAll() {
		t.Fatalf("%s (SLUICE_TEST_REQUIRE_ALL=1: the %s suite is required)", msg, suite)
	}
	fmt.Fprintf(os.Stderr, "\n!!! SKIPPING %s TEST %s: %s\n", strings.ToUpper(suite), t.Name(), msg)
	t.Skip(msg)
}

// NeedTools is Unavailable for the first of tools that is not installed,
// naming install, the packages that bring them. A tool is a name on PATH
// or an absolute path; Debian keeps PostgreSQL's server binaries (initdb,
// pg_ctl) in its versioned directory, which counts as installed too, as
// the bench scripts look there.
func NeedTools(t testing.TB, suite, install string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		_, err := exec.LookPath(tool)
		if err == nil {
			continue
		}
		if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + tool); len(found) > 0 {
			continue
		}
		Unavailable(t, suite, fmt.Sprintf("%s is not installed (%s)", tool, install), err, nil)
	}
}
