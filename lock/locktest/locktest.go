// Package locktest is the conformance suite that every lock backend must
// pass. A backend's test calls Exercise with an Opener and what the backend
// can promise:
//
//	func TestRedis(t *testing.T) {
//		locktest.Exercise(t, locktest.Open(t, "redis"), locktest.Caps{TTL: true, Fence: true})
//	}
//
// Every case uses its own random lock names, so cases run in parallel
// against one server. Crash behaviour (a SIGKILLed holder) needs a real
// process and is tested with the sluice binary in cmd/sluice/internal/cli.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/lock"
)

// Opener returns a Locker on the backend under test whose holders are
// named id, closed when t ends. Every Locker it returns shares one
// namespace, so they contend for the same names as separate processes would.
type Opener func(t testing.TB, id string) lock.Locker

// Caps says what a backend promises.
type Caps struct {
	// TTL: a lock lapses ttl after its last renewal, and a lapsed holder
	// can neither renew nor release its successor's lock.
	TTL bool
	// Session: a lock ends with its holder's process or connection.
	Session bool
	// Fence: every acquisition gets a fencing number larger than all before.
	Fence bool
}

// Exercise runs every conformance case against the backend. It marks t
// parallel: the cases spend most of their time waiting out ttls, so the
// backends' suites overlap.
func Exercise(t *testing.T, open Opener, caps Caps) {
	t.Helper()
	t.Parallel()
	cases := []struct {
		name string
		run  func(*testing.T, Opener, Caps)
		when bool
	}{
		{"OneHolder", oneHolder, true},
		{"NoOverlap", noOverlap, true},
		{"ReleaseHandsOver", releaseHandsOver, true},
		{"NamesAreIndependent", namesAreIndependent, true},
		{"BadNames", badNames, true},
		{"RenewalKeepsHeld", renewalKeepsHeld, true},
		{"FenceGrows", fenceGrows, true},
		{"ExpiryHandsOver", expiryHandsOver, caps.TTL},
		{"ReleaseAfter", releaseAfter, caps.TTL},
	}
	for _, c := range cases {
		if !c.when {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open, caps)
		})
	}
}

// Name returns a fresh lock name, so that cases and runs never meet.
func Name() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "locktest-" + hex.EncodeToString(b)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// acquire takes the lock and fails the test if it is busy.
func acquire(t *testing.T, l lock.Locker, name string, ttl time.Duration) lock.Lease {
	t.Helper()
	lease, h, err := l.TryAcquire(ctx(t), name, ttl)
	require.NoError(t, err)
	require.NotNil(t, lease, "lock %s busy, held by %s", name, h)
	return lease
}

// busy checks that the lock is held by someone else and returns the holder.
func busy(t *testing.T, l lock.Locker, name string) lock.Holder {
	t.Helper()
	lease, h, err := l.TryAcquire(ctx(t), name, time.Minute)
	require.NoError(t, err)
	if lease != nil {
		lease.Release(ctx(t))
		require.Fail(t, "lock taken while another holder had it", "lock %s", name)
	}
	return h
}

func oneHolder(t *testing.T, open Opener, _ Caps) {
	const n = 8
	name := Name()
	lockers := make([]lock.Locker, n)
	for i := range lockers {
		lockers[i] = open(t, fmt.Sprintf("contender-%d", i))
	}
	leases := make([]lock.Lease, n)
	holders := make([]lock.Holder, n)
	errs := make([]error, n)
	start := make(chan struct{})
	c := ctx(t)
	var wg sync.WaitGroup
	for i := range lockers {
		wg.Go(func() {
			<-start
			leases[i], holders[i], errs[i] = lockers[i].TryAcquire(c, name, time.Minute)
		})
	}
	before := time.Now()
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		require.NoError(t, errs[i], "contender %d", i)
		if leases[i] != nil {
			require.Equal(t, -1, winner, "contenders %d and %d both hold %s", winner, i, name)
			winner = i
			continue
		}
		// A contender racing the winner's bookkeeping may see only part
		// of the holder's name, but never nothing at all.
		require.NotEmpty(t, holders[i].ID, "contender %d was not told who holds the lock", i)
	}
	require.NotEqual(t, -1, winner, "nobody got the lock")

	// Once the race is over, the holder is named exactly.
	h := busy(t, lockers[(winner+1)%n], name)
	require.Equal(t, fmt.Sprintf("contender-%d", winner), h.ID)
	require.WithinDuration(t, before, h.Since, time.Minute, "holder since")
	require.Contains(t, h.String(), fmt.Sprintf("contender-%d since ", winner))

	require.NoError(t, leases[winner].Release(ctx(t)))
	require.NoError(t, leases[winner].Release(ctx(t)), "a second release is a no-op")
	require.ErrorIs(t, leases[winner].Renew(ctx(t)), lock.ErrLost, "renewed a released lease")
	next := acquire(t, lockers[(winner+1)%n], name, time.Minute)
	require.NoError(t, next.Release(ctx(t)))
}

// noOverlap churns one name between contenders and checks that no two
// ever hold it at once. It runs until the lock has changed hands often
// enough, not for a fixed time: on a loaded machine a fixed second may
// pass before anyone got the lock.
func noOverlap(t *testing.T, open Opener, _ Caps) {
	const contenders, turns = 4, 40
	name := Name()
	var inside, max, taken atomic.Int64
	giveUp := time.Now().Add(50 * time.Second) // inside ctx's minute
	c := ctx(t)
	lockers := make([]lock.Locker, contenders)
	for i := range lockers {
		lockers[i] = open(t, fmt.Sprintf("churn-%d", i))
	}
	racetest.Run(t, contenders, func(i int) error {
		l := lockers[i]
		for taken.Load() < turns {
			if time.Now().After(giveUp) {
				return fmt.Errorf("the lock changed hands %d times in 50 s, want %d", taken.Load(), turns)
			}
			lease, _, err := l.TryAcquire(c, name, time.Minute)
			if err != nil {
				return err
			}
			if lease == nil {
				time.Sleep(time.Millisecond)
				continue
			}
			n := inside.Add(1)
			for {
				m := max.Load()
				if n <= m || max.CompareAndSwap(m, n) {
					break
				}
			}
			taken.Add(1)
			time.Sleep(2 * time.Millisecond)
			inside.Add(-1)
			if err := lease.Release(c); err != nil {
				return err
			}
		}
		return nil
	})
	require.EqualValues(t, 1, max.Load(), "holders overlapped")
}

func releaseHandsOver(t *testing.T, open Opener, caps Caps) {
	a, b := open(t, "A"), open(t, "B")
	name := Name()
	la := acquire(t, a, name, time.Minute)
	require.Equal(t, "A", busy(t, b, name).ID)
	require.NoError(t, la.Release(ctx(t)))
	lb := acquire(t, b, name, time.Minute)
	// A's stale lease must not free B's lock.
	require.NoError(t, la.Release(ctx(t)))
	require.ErrorIs(t, la.Renew(ctx(t)), lock.ErrLost)
	require.Equal(t, "B", busy(t, a, name).ID)
	require.NoError(t, lb.Renew(ctx(t)))
	require.NoError(t, lb.Release(ctx(t)))
	if !caps.Fence {
		require.Zero(t, la.Fence(), "a backend without fences reported one")
	}
}

func namesAreIndependent(t *testing.T, open Opener, _ Caps) {
	a, b := open(t, "A"), open(t, "B")
	x, y := Name(), Name()
	lx := acquire(t, a, x, time.Minute)
	ly := acquire(t, b, y, time.Minute)
	busy(t, b, x)
	busy(t, a, y)
	require.NoError(t, lx.Release(ctx(t)))
	require.NoError(t, ly.Release(ctx(t)))
	// A name with characters that mean something to a file system, a key
	// space or SQL still names one lock.
	odd := Name() + "/../{x}'; --"
	lo := acquire(t, a, odd, time.Minute)
	busy(t, b, odd)
	require.NoError(t, lo.Release(ctx(t)))
}

func badNames(t *testing.T, open Opener, _ Caps) {
	l := open(t, "A")
	for _, name := range []string{"", string(make([]byte, lock.MaxNameLen+1)), "nul\x00byte"} {
		lease, _, err := l.TryAcquire(ctx(t), name, time.Minute)
		require.Error(t, err, "name %q", name)
		require.Nil(t, lease)
	}
}

// renewalKeepsHeld holds a lock for two and a half ttls by renewing it,
// while a contender keeps trying. The ttl is 2 s: Keep gives up once
// renewals have failed for a whole ttl, and with 300 ms a renewal through
// PgBouncer on a loaded CI machine missed it.
func renewalKeepsHeld(t *testing.T, open Opener, _ Caps) {
	a, b := open(t, "A"), open(t, "B")
	name := Name()
	const ttl = 2 * time.Second
	la := acquire(t, a, name, ttl)
	kctx, stop := context.WithCancel(ctx(t))
	lost := lock.Keep(kctx, la, ttl, 0)
	end := time.Now().Add(5 * ttl / 2)
	for time.Now().Before(end) {
		require.Equal(t, "A", busy(t, b, name).ID)
		select {
		case err := <-lost:
			require.NoError(t, err, "renewal lost the lock")
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()
	require.NoError(t, la.Release(ctx(t)))
	lb := acquire(t, b, name, ttl)
	require.NoError(t, lb.Release(ctx(t)))
}

func fenceGrows(t *testing.T, open Opener, caps Caps) {
	a, b := open(t, "A"), open(t, "B")
	name := Name()
	last := int64(0)
	for i := range 6 {
		l := []lock.Locker{a, b}[i%2]
		lease := acquire(t, l, name, time.Minute)
		f := lease.Fence()
		require.NoError(t, lease.Renew(ctx(t)))
		require.Equal(t, f, lease.Fence(), "renewal changed the fence")
		require.NoError(t, lease.Release(ctx(t)))
		if !caps.Fence {
			require.Zero(t, f)
			continue
		}
		require.Greater(t, f, last, "acquisition %d", i)
		last = f
	}
}

// expiryHandsOver lets a lease lapse without renewal and checks that the
// next holder gets the lock only then, and that the lapsed holder cannot
// renew or release the new holder's lock.
func expiryHandsOver(t *testing.T, open Opener, caps Caps) {
	a, b, c := open(t, "A"), open(t, "B"), open(t, "C")
	name := Name()
	const ttl = 400 * time.Millisecond
	start := time.Now()
	la := acquire(t, a, name, ttl)
	lb := acquireWhenFree(t, b, name, start, "the lapsed lock was never handed over")
	// 50ms covers the rounding of the backend's own clock.
	require.GreaterOrEqual(t, time.Since(start), ttl-50*time.Millisecond, "lock handed over before its ttl")
	// Release first: a Renew that finds the lease lost marks it done, and
	// the release would then not reach the backend at all.
	require.ErrorIs(t, la.Release(ctx(t)), lock.ErrLost, "the lapsed holder's release reported success")
	require.ErrorIs(t, la.Renew(ctx(t)), lock.ErrLost, "the lapsed holder renewed")
	require.Equal(t, "B", busy(t, c, name).ID, "the lapsed holder freed its successor's lock")
	require.NoError(t, lb.Renew(ctx(t)))
	if caps.Fence {
		require.Greater(t, lb.Fence(), la.Fence(), "takeover after expiry kept the fence")
	}
	require.NoError(t, lb.Release(ctx(t)))
}

// acquireWhenFree polls l every 20ms until it takes name, failing t with
// never once 20 seconds have passed since start.
func acquireWhenFree(t *testing.T, l lock.Locker, name string, start time.Time, never string) lock.Lease {
	t.Helper()
	var lease lock.Lease
	for lease == nil {
		var err error
		lease, _, err = l.TryAcquire(ctx(t), name, time.Minute)
		require.NoError(t, err)
		require.Less(t, time.Since(start), 20*time.Second, never)
		time.Sleep(20 * time.Millisecond)
	}
	return lease
}

// releaseAfter leaves a lock to lapse a little later instead of freeing it.
func releaseAfter(t *testing.T, open Opener, _ Caps) {
	a, b := open(t, "A"), open(t, "B")
	name := Name()
	la := acquire(t, a, name, time.Minute)
	e, ok := la.(lock.Expirer)
	require.True(t, ok, "a TTL backend's lease should implement lock.Expirer")
	const hold = 300 * time.Millisecond
	start := time.Now()
	require.NoError(t, e.ReleaseAfter(ctx(t), hold))
	require.NoError(t, la.Release(ctx(t)), "Release after ReleaseAfter is a no-op")
	require.Equal(t, "A", busy(t, b, name).ID, "the lock went before its hold")
	lb := acquireWhenFree(t, b, name, start, "the lock never lapsed")
	require.GreaterOrEqual(t, time.Since(start), hold-50*time.Millisecond)
	require.NoError(t, lb.Release(ctx(t)))
}

// Benchmark measures one uncontended acquire and release and reports ops/s.
func Benchmark(b *testing.B, open Opener) {
	l := open(b, "bench")
	name := Name()
	c := context.Background()
	for b.Loop() {
		lease, _, err := l.TryAcquire(c, name, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if lease == nil {
			b.Fatal(errors.New("lock busy"))
		}
		if err := lease.Release(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
