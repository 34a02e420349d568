package lock

import (
	"context"
	"fmt"
	"strings"
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
	if err := checkTTLAcquire(name, ttl); err != nil {
		return nil, Holder{}, err
	}
	holder := k.id + " " + token()
	l, err := k.d.AcquireLease(ctx, driver.LeaseParams{Name: leaseNamePrefix + name, Holder: holder, TTL: ttl})
	if err != nil {
		return nil, Holder{}, fmt.Errorf("lease lock %s: %w", name, err)
	}
	if !l.Held {
		return nil, Holder{ID: holderID(l.Holder), Since: l.Since}, nil
	}
	row := leaseRow{d: k.d, name: leaseNamePrefix + name, holder: holder, fence: l.Fence}
	return &ttlLease{backend: "lease lock", name: name, ttl: ttl, fence: l.Fence, store: row}, Holder{}, nil
}

// holderID drops the token from a holder column.
func holderID(holder string) string {
	if i := strings.LastIndexByte(holder, ' '); i >= 0 {
		return holder[:i]
	}
	return holder
}

func (k *leaseLocker) Close() error { return k.d.Close() }

// leaseRow is one acquisition's sluice_leases row.
type leaseRow struct {
	d      driver.Driver
	name   string // with leaseNamePrefix
	holder string
	fence  int64
}

// extend acquires again as the same holder, which the driver treats as a
// renewal: the row keeps its fence and gets a new expiry.
func (r leaseRow) extend(ctx context.Context, ttl time.Duration) (string, error) {
	got, err := r.d.AcquireLease(ctx, driver.LeaseParams{Name: r.name, Holder: r.holder, TTL: ttl})
	if err != nil {
		return "", err
	}
	if !got.Held || got.Fence != r.fence {
		return "the lease lapsed and " + holderID(got.Holder) + " took it", nil
	}
	return "", nil
}

func (r leaseRow) release(ctx context.Context) (string, error) {
	ok, err := r.d.ReleaseLease(ctx, driver.ReleaseLeaseParams{Name: r.name, Holder: r.holder})
	if err != nil || ok {
		return "", err
	}
	return "the lease lapsed and was taken", nil
}
