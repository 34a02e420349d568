package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Named leases (queries/leases.sql of each dialect).

// GetLease reads a lease row; a missing row is a free lease.
func (b *Base) GetLease(ctx context.Context, q driver.Querier, name string) (sluicetype.LeaseState, bool, error) {
	var l sluicetype.LeaseState
	var since, until Time
	err := q.QueryRowContext(ctx, b.Q.LeaseGet, name).Scan(&l.Holder, &l.Fence, &since, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("read lease %s: %w", name, err)
	}
	l.Since, l.Until = since.Time, until.Time
	return l, true, nil
}

// UpsertLease acquires through acquire, an upsert that only changes the
// row when the lease is free or already ours (SQLite's and PostgreSQL's
// LeaseAcquire).
func (b *Base) UpsertLease(ctx context.Context, p driver.LeaseParams, acquire string) (sluicetype.LeaseState, error) {
	var l sluicetype.LeaseState
	err := RetryTransient(ctx, b.Transient, func() error {
		var since, until Time
		err := b.Write.QueryRowContext(ctx, acquire, p.Name, p.Holder, b.Duration(p.TTL)).
			Scan(&l.Holder, &l.Fence, &since, &until)
		if errors.Is(err, sql.ErrNoRows) {
			cur, _, err := b.GetLease(ctx, b.Write, p.Name)
			l = cur
			return err
		}
		if err != nil {
			return err
		}
		l.Held, l.Since, l.Until = true, since.Time, until.Time
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("acquire lease %s: %w", p.Name, err)
	}
	return l, nil
}

// ReleaseLease frees the lease if holder holds it. The row stays, so that
// its fencing number keeps growing across holders.
func (b *Base) ReleaseLease(ctx context.Context, p driver.ReleaseLeaseParams) (bool, error) {
	name, holder := p.Name, p.Holder
	n, err := b.ExecCount(ctx, b.Q.LeaseRelease, name, holder)
	if err != nil {
		return false, fmt.Errorf("release lease %s: %w", name, err)
	}
	return n == 1, nil
}
