// Package racetest runs a test's racing goroutines. It depends on nothing
// of sluice's, so that the driver conformance suite (driver/drivertest)
// can use it without pulling in the bundled drivers.
package racetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run runs fn(0) to fn(n-1) on n goroutines, released together once all
// have started so that they race from the first call, waits for all of
// them, and fails t with every error they returned, from the test's
// goroutine (where FailNow may run).
func Run(t testing.TB, n int, fn func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}
