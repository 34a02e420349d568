package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeLease answers Renew from a script of errors, then with nil.
type fakeLease struct {
	mu      sync.Mutex
	errs    []error
	renewed int
}

func (f *fakeLease) Fence() int64                  { return 0 }
func (f *fakeLease) Release(context.Context) error { return nil }
func (f *fakeLease) Renew(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed++
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	if len(f.errs) > 1 {
		f.errs = f.errs[1:]
	}
	return err
}

var errFlaky = errors.New("connection refused")

func TestKeepRenewsAndSurvivesABlip(t *testing.T) {
	// Two failures then success: retried within the ttl, never lost. A
	// ttl of seconds, as below: the blip ends at 3.2 s (renewal at ttl/3,
	// retries every ttl/10), 1.8 s before the margin, which no scheduling
	// delay of a loaded machine eats; with a 300 ms ttl a CI run under
	// -race lost it.
	f := &fakeLease{errs: []error{errFlaky, errFlaky, nil}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ttl, margin = 6 * time.Second, time.Second
	lost := Keep(ctx, f, ttl, margin)
	renewed := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.renewed
	}
	// The blip's three calls, then two more renewals a ttl/3 apart.
	for deadline := time.Now().Add(time.Minute); renewed() < 5; {
		select {
		case err := <-lost:
			t.Fatalf("lost after a short blip: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("renewed %d times in a minute, want 5", renewed())
		}
	}
}

func TestKeepGivesUpBeforeTheLeaseLapses(t *testing.T) {
	f := &fakeLease{errs: []error{errFlaky}}
	// A ttl of seconds, so that a loaded machine's scheduling delays stay
	// small beside the margin the bound leaves.
	const ttl, margin = 3 * time.Second, time.Second
	start := time.Now()
	err := <-Keep(context.Background(), f, ttl, margin)
	took := time.Since(start)
	require.ErrorIs(t, err, ErrLost)
	require.ErrorIs(t, err, errFlaky)
	require.GreaterOrEqual(t, took, ttl/3, "gave up at the first failure")
	require.Less(t, took, ttl, "gave up only after the lease could lapse")
	f.mu.Lock()
	defer f.mu.Unlock()
	// Renewals fail from ttl/3 on, retried every ttl/10, and stop when the
	// next retry would pass ttl-margin: (ttl-margin-ttl/3)/(ttl/10)+1 = 4.
	require.LessOrEqual(t, f.renewed, 4, "renewed into the margin")
}

func TestKeepReportsLossAtOnce(t *testing.T) {
	f := &fakeLease{errs: []error{ErrLost}}
	const ttl = 3 * time.Second
	start := time.Now()
	err := <-Keep(context.Background(), f, ttl, 0)
	require.ErrorIs(t, err, ErrLost)
	// At the first renewal (ttl/3), not after retrying until the second.
	require.Less(t, time.Since(start), 2*ttl/3)
}
