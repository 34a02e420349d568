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
	// Two failures then success: retried within the ttl, never lost.
	f := &fakeLease{errs: []error{errFlaky, errFlaky, nil}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lost := Keep(ctx, f, 300*time.Millisecond, 50*time.Millisecond)
	select {
	case err := <-lost:
		t.Fatalf("lost after a short blip: %v", err)
	case <-time.After(time.Second):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	require.GreaterOrEqual(t, f.renewed, 5, "renewed every ttl/3")
}

func TestKeepGivesUpBeforeTheLeaseLapses(t *testing.T) {
	f := &fakeLease{errs: []error{errFlaky}}
	const ttl, margin = 300 * time.Millisecond, 100 * time.Millisecond
	start := time.Now()
	err := <-Keep(context.Background(), f, ttl, margin)
	require.ErrorIs(t, err, ErrLost)
	require.ErrorIs(t, err, errFlaky)
	require.Less(t, time.Since(start), ttl-margin+20*time.Millisecond, "gave up too late to stop the work in time")
	require.GreaterOrEqual(t, time.Since(start), ttl/3, "gave up at the first failure")
}

func TestKeepReportsLossAtOnce(t *testing.T) {
	f := &fakeLease{errs: []error{ErrLost}}
	start := time.Now()
	err := <-Keep(context.Background(), f, 300*time.Millisecond, 0)
	require.ErrorIs(t, err, ErrLost)
	require.Less(t, time.Since(start), 200*time.Millisecond)
}
