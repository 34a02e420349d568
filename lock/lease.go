package lock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

// leaseLocker holds a row of sluice_leases through the driver's lease
// calls: the row names its holder, lapses ttl after the last renewal, and
// carries a fencing number the driver raises whenever the holder changes.
// Every acquisition uses a fresh holder string ("ID TOKEN"), so every
// acquisition gets a larger fence, and a holder whose lease lapsed can
// neither renew nor release its successor's.
type leaseLocker struct {
	d  driver.Driver
	id string
}

// leaseNamePrefix keeps lock names apart from sluice's own leases
// ("leader", "run:QUEUE:TYPE") in the same table.
const leaseNamePrefix = "lock:"

func openLease(rawURL string, opts Options) (*leaseLocker, error) {
	if _, err := dburl.Scheme(rawURL); err != nil {
		return nil, err
	}
	if rawURL == "sqlite:" || rawURL == "sqlite://" {
		return nil, fmt.Errorf("lock backend %s: give the database file, as in sqlite:/var/lib/sluice/locks.db", rawURL)
	}
	d, err := dburl.Open(rawURL, dburl.Options{Prefix: opts.Prefix})
	if err != nil {
		return nil, fmt.Errorf("lease lock: open %s: %w", dburl.Redact(rawURL), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrate(ctx, d); err != nil {
		d.Close()
		return nil, fmt.Errorf("lease lock: migrate %s: %w", dburl.Redact(rawURL), err)
	}
	// The holder column is 191 characters; the token and its space need 25.
	return &leaseLocker{d: d, id: truncate(opts.ID, 160)}, nil
}

// migrate brings a lock backend's database up to sluice's schema, whose
// tables (leases, MySQL's lock holders) the backends use. A lock database
// is often made just for locks, so it is migrated here rather than
// demanding a `sluice migrate`; an up-to-date one costs a single read.
func migrate(ctx context.Context, d driver.Driver) error {
	if cur, latest, err := d.SchemaVersion(ctx); err == nil && cur >= latest {
		return nil
	}
	_, err := d.Migrate(ctx)
	return err
}

func (k *leaseLocker) TryAcquire(ctx context.Context, name string, ttl time.Duration) (Lease, Holder, error) {
	if err := CheckName(name); err != nil {
		return nil, Holder{}, err
	}
	if ttl < time.Millisecond {
		return nil, Holder{}, fmt.Errorf("lock %s: ttl %s is under a millisecond", name, ttl)
	}
	holder := k.id + " " + token()
	l, err := k.d.AcquireLease(ctx, driver.LeaseParams{Name: leaseNamePrefix + name, Holder: holder, TTL: ttl})
	if err != nil {
		return nil, Holder{}, fmt.Errorf("lease lock %s: %w", name, err)
	}
	if !l.Held {
		return nil, Holder{ID: holderID(l.Holder), Since: l.Since}, nil
	}
	return &leaseLease{d: k.d, name: name, holder: holder, ttl: ttl, fence: l.Fence}, Holder{}, nil
}

// holderID drops the token from a holder column.
func holderID(holder string) string {
	if i := strings.LastIndexByte(holder, ' '); i >= 0 {
		return holder[:i]
	}
	return holder
}

func (k *leaseLocker) Close() error { return k.d.Close() }

type leaseLease struct {
	d      driver.Driver
	name   string
	holder string
	ttl    time.Duration
	fence  int64

	mu   sync.Mutex
	done bool // released, lost, or left to expire
}

func (l *leaseLease) Fence() int64 { return l.fence }

func (l *leaseLease) Renew(ctx context.Context) error { return l.extend(ctx, l.ttl, false) }

// ReleaseAfter sets the row to lapse d from now and stops renewals.
func (l *leaseLease) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d < time.Millisecond {
		return l.Release(ctx)
	}
	return l.extend(ctx, d, true)
}

// extend acquires again as the same holder, which the driver treats as a
// renewal: the row keeps its fence and gets a new expiry.
func (l *leaseLease) extend(ctx context.Context, ttl time.Duration, last bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("lease lock %s: %w: already released", l.name, ErrLost)
	}
	got, err := l.d.AcquireLease(ctx, driver.LeaseParams{Name: leaseNamePrefix + l.name, Holder: l.holder, TTL: ttl})
	if err != nil {
		return fmt.Errorf("lease lock %s: renew: %w", l.name, err)
	}
	if !got.Held || got.Fence != l.fence {
		l.done = true
		return fmt.Errorf("lease lock %s: %w: the lease lapsed and %s took it", l.name, ErrLost, holderID(got.Holder))
	}
	l.done = last
	return nil
}

func (l *leaseLease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	ok, err := l.d.ReleaseLease(ctx, leaseNamePrefix+l.name, l.holder)
	if err != nil {
		return fmt.Errorf("lease lock %s: %w", l.name, err)
	}
	l.done = true
	if !ok {
		return fmt.Errorf("lease lock %s: %w before release: the lease lapsed and was taken", l.name, ErrLost)
	}
	return nil
}
