package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func scanSchedule(scan func(...any) error) (sluicetype.ScheduleState, error) {
	var s sluicetype.ScheduleState
	var last, updated Time
	var jobID sql.NullInt64
	if err := scan(&s.Name, &last, &jobID, &s.Version, &s.Fires, &s.Skips, &updated); err != nil {
		return s, err
	}
	s.Found, s.LastSlot, s.LastJobID, s.UpdatedAt = true, last.Time, jobID.Int64, updated.Time
	return s, nil
}

// ScheduleState reads one schedule's progress.
func (b *Base) ScheduleState(ctx context.Context, p driver.ScheduleStateParams) (sluicetype.ScheduleState, error) {
	name := p.Name
	s, err := scanSchedule(b.Read.QueryRowContext(ctx, b.Q.ScheduleGet, name).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return sluicetype.ScheduleState{Name: name}, nil
	}
	if err != nil {
		return s, fmt.Errorf("read schedule %s: %w", name, err)
	}
	return s, nil
}

// InitSchedule inserts a schedule's row unless it exists.
func (b *Base) InitSchedule(ctx context.Context, p driver.InitScheduleParams) error {
	name, last := p.Name, p.Last
	err := RetryTransient(ctx, b.Transient, func() error {
		_, err := b.Write.ExecContext(ctx, b.Q.ScheduleInit, name, b.Time(last))
		return err
	})
	if err != nil {
		return fmt.Errorf("init schedule %s: %w", name, err)
	}
	return nil
}

// AdvanceSchedule is a compare-and-set on the schedule's version. A loser
// still adds the slots it fired: only the node whose insert created a
// slot's job counts it, so fires stay exact while skips, which several
// nodes may see for one slot, count only for the winner.
func (b *Base) AdvanceSchedule(ctx context.Context, p driver.AdvanceScheduleParams) (bool, error) {
	var jobID sql.NullInt64
	if p.LastJobID > 0 {
		jobID = sql.NullInt64{Int64: p.LastJobID, Valid: true}
	}
	var n int64
	err := RetryTransient(ctx, b.Transient, func() error {
		res, err := b.Write.ExecContext(ctx, b.Q.ScheduleAdvance, b.Time(p.LastSlot), jobID, p.Fired, p.Skipped, p.Name, p.Version)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 1 || p.Fired == 0 {
			return err
		}
		_, err = b.Write.ExecContext(ctx, b.Q.ScheduleFires, p.Fired, p.Name)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("advance schedule %s: %w", p.Name, err)
	}
	return n == 1, nil
}

// ListSchedules reads every schedule's progress.
func (b *Base) ListSchedules(ctx context.Context) ([]sluicetype.ScheduleState, error) {
	return QueryAll(ctx, b.Read, "list schedules", b.Q.ScheduleList, nil, func(rows *sql.Rows) (sluicetype.ScheduleState, error) {
		return scanSchedule(rows.Scan)
	})
}
