package lock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The TTL backends (a sluice_leases row, a Redis key) hold a lock that
// lapses ttl after its last renewal. They differ only in how they extend
// and free it; ttlLease is the state machine they share: a lease is held
// until Release, a failed renewal (lost) or ReleaseAfter, and is done after
// any of them, so that a lease left to lapse is never renewed again.

// ttlStore extends and frees one acquisition's lock in its backend, each
// only while that acquisition still holds it.
type ttlStore interface {
	// extend makes the lock lapse ttl from now. lost is empty while the
	// lock is ours, else says who or what took it.
	extend(ctx context.Context, ttl time.Duration) (lost string, err error)
	// release frees the lock. lost is empty if it was ours.
	release(ctx context.Context) (lost string, err error)
}

// checkTTLAcquire checks the arguments of a TTL backend's TryAcquire.
func checkTTLAcquire(name string, ttl time.Duration) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("lock %s: ttl %s is under a millisecond", name, ttl)
	}
	return nil
}

type ttlLease struct {
	backend string // "lease lock", "redis lock": starts every error
	name    string
	ttl     time.Duration
	fence   int64
	store   ttlStore

	mu   sync.Mutex
	done bool // released, lost, or left to lapse
}

func (l *ttlLease) Fence() int64 { return l.fence }

func (l *ttlLease) Renew(ctx context.Context) error { return l.extend(ctx, l.ttl, false) }

// ReleaseAfter makes the lock lapse d from now and stops renewals.
func (l *ttlLease) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return l.Release(ctx)
	}
	return l.extend(ctx, d, true)
}

func (l *ttlLease) extend(ctx context.Context, ttl time.Duration, last bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("%s %s: %w: already released", l.backend, l.name, ErrLost)
	}
	lost, err := l.store.extend(ctx, ttl)
	if err != nil {
		return fmt.Errorf("%s %s: renew: %w", l.backend, l.name, err)
	}
	if lost != "" {
		l.done = true
		return fmt.Errorf("%s %s: %w: %s", l.backend, l.name, ErrLost, lost)
	}
	l.done = last
	return nil
}

func (l *ttlLease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	lost, err := l.store.release(ctx)
	if err != nil {
		return fmt.Errorf("%s %s: release: %w", l.backend, l.name, err)
	}
	l.done = true
	if lost != "" {
		return fmt.Errorf("%s %s: %w before release: %s", l.backend, l.name, ErrLost, lost)
	}
	return nil
}
