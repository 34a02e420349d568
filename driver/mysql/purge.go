package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// purgeBound returns the highest id that a purge of the jobs finished in
// status more than olderThan ago need read, or 0 when none can be due.
//
// MySQL has no partial index, and an index over (status, finished_at)
// would cost every status change of every job one more index write
// (migration 005), so the purge reads a status's rows in id order through
// sluice_jobs_status_id and fetches each one's finished_at. Unbounded, the
// last chunk of every pass read every row that retention keeps: with seven
// days of finished jobs that is most of the table, every minute, and once
// the table outgrows the buffer pool those reads compete with claims and
// completions for it.
//
// A job finishes after it is created, and ids grow with created_at (both
// are set at insert, by AUTO_INCREMENT and the server's clock), so no job
// past the last one created before the cutoff can be due. The search for it
// is a binary one over the primary key: about 25 point reads for a
// range of ten million ids. Where concurrent inserts give ids a few
// milliseconds out of created_at's order, a due row just past the bound is
// left to the next pass, when the cutoff has moved on.
func (d *Driver) purgeBound(ctx context.Context, status sluicetype.Status, olderThan time.Duration) (int64, error) {
	var lo, hi sql.NullInt64
	if err := d.Read.QueryRowContext(ctx, d.q.PurgeSpan, status).Scan(&lo, &hi); err != nil {
		return 0, fmt.Errorf("find the last id created before the cutoff: %w", err)
	}
	if !lo.Valid {
		return 0, nil
	}
	cutoff := d.Duration(-olderThan)
	// probe reads the first job from id on: its id, and whether it was
	// created before the cutoff.
	probe := func(id int64) (int64, bool, error) {
		var next int64
		var old bool
		err := d.Read.QueryRowContext(ctx, d.q.PurgeProbe, cutoff, id).Scan(&next, &old)
		if errors.Is(err, sql.ErrNoRows) {
			// Deleted since the span was read: nothing from here on is due.
			return id, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("find the last id created before the cutoff: %w", err)
		}
		return next, old, nil
	}
	first, old, err := probe(lo.Int64)
	if err != nil || !old {
		return 0, err
	}
	// Invariant: the job at l was created before the cutoff, and the first
	// job from any id above h was not (or there is none).
	l, h := first, hi.Int64
	for l < h {
		mid := l + (h-l+1)/2
		next, old, err := probe(mid)
		if err != nil {
			return 0, err
		}
		if old {
			l = next
		} else {
			h = mid - 1
		}
	}
	return l, nil
}
