package mysql

import (
	"context"
	"database/sql"

	"github.com/sluicehq/sluice/driver"
)

// LockHolders runs the statements of PREFIXlock_holders, where the holders
// of the lock package's GET_LOCK locks record their names and count their
// acquisitions. Each runs on the caller's connection: a named lock belongs
// to its session, so the row is written and read by the session that
// holds, or asks about, the lock.
type LockHolders struct {
	record, fence, holder string
}

// LockHolders returns the lock-holder statements under this driver's
// prefix. They need nothing of the driver's pool, so they outlive it.
func (d *Driver) LockHolders() LockHolders {
	return LockHolders{record: d.q.LockRecord, fence: d.q.LockFence, holder: d.q.LockHolder}
}

// Record writes name's row for holder, stamped with q's session, counts
// the acquisition and returns the count: the lock's fencing number. q must
// hold the named lock, so that only one session ever writes the row.
func (h LockHolders) Record(ctx context.Context, q driver.Querier, name, holder string) (fence int64, err error) {
	if _, err := q.ExecContext(ctx, h.record, name, holder); err != nil {
		return 0, err
	}
	err = q.QueryRowContext(ctx, h.fence, name).Scan(&fence)
	return fence, err
}

// Holder reads who holds the named lock key, recorded under name: the
// session IS_USED_LOCK reports (not Valid when none holds it) and, only
// if that very session wrote the row, its holder and since.
func (h LockHolders) Holder(ctx context.Context, q driver.Querier, key, name string) (session sql.NullInt64, holder sql.NullString, since sql.NullTime, err error) {
	err = q.QueryRowContext(ctx, h.holder, key, name).Scan(&session, &holder, &since)
	return session, holder, since, err
}
