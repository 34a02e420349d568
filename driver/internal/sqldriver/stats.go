package sqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Queue counts and pauses (queries/stats.sql of each dialect).

// Stats counts live jobs per queue. Each part of Stats reads one
// partial index, so finished rows are never scanned.
func (b *Base) Stats(ctx context.Context) ([]sluicetype.QueueStats, error) {
	byQueue := map[string]*sluicetype.QueueStats{}
	var order []string
	err := QueryEach(ctx, b.Read, "stats", b.Q.Stats, nil, func(rows *sql.Rows) error {
		var queue string
		var status sluicetype.Status
		var n int64
		var oldest Time
		if err := rows.Scan(&queue, &status, &n, &oldest); err != nil {
			return err
		}
		s := byQueue[queue]
		if s == nil {
			s = &sluicetype.QueueStats{Queue: queue}
			byQueue[queue] = s
			order = append(order, queue)
		}
		switch status {
		case sluicetype.StatusPending:
			s.Pending, s.OldestPending = n, oldest.Ptr()
		case sluicetype.StatusProcessing:
			s.Processing = n
		case sluicetype.StatusFailed:
			s.Failed = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]sluicetype.QueueStats, 0, len(order))
	for _, q := range order {
		out = append(out, *byQueue[q])
	}
	return out, nil
}

// SetQueuePaused records a queue's paused flag.
func (b *Base) SetQueuePaused(ctx context.Context, p driver.SetQueuePausedParams) error {
	queue, paused := p.Queue, p.Paused
	if _, err := b.Write.ExecContext(ctx, b.Q.QueuePause, queue, paused); err != nil {
		return fmt.Errorf("set queue %s paused=%v: %w", queue, paused, err)
	}
	return nil
}

// PausedQueues returns the queues whose paused flag is set.
func (b *Base) PausedQueues(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := QueryEach(ctx, b.Read, "read paused queues", b.Q.QueuesPaused, nil, func(rows *sql.Rows) error {
		var q string
		err := rows.Scan(&q)
		out[q] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
