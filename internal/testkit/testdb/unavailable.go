package testdb

import (
	"fmt"
	"os"
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
