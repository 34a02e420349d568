package sqldriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Queue counts, pauses and the shared gauge counts (queries/stats.sql of
// each dialect).

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

// gaugeQueue is one queue's counts in sluice_gauges.queues, a JSON array:
// one column, so that PutGauges is one statement on every database.
type gaugeQueue struct {
	Queue         string     `json:"queue"`
	Pending       int64      `json:"pending"`
	Processing    int64      `json:"processing"`
	Failed        int64      `json:"failed"`
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
}

// ClaimGauges takes this interval's refresh of the shared gauge counts
// if no process took it within p.Every.
func (b *Base) ClaimGauges(ctx context.Context, p driver.ClaimGaugesParams) (bool, error) {
	n, err := b.ExecCount(ctx, b.Q.GaugesClaim, b.Duration(-p.Every))
	if err != nil {
		return false, fmt.Errorf("claim the gauge refresh: %w", err)
	}
	return n == 1, nil
}

// PutGauges writes the shared gauge counts.
func (b *Base) PutGauges(ctx context.Context, p driver.PutGaugesParams) error {
	qs := make([]gaugeQueue, len(p.Queues))
	for i, s := range p.Queues {
		qs[i] = gaugeQueue{Queue: s.Queue, Pending: s.Pending, Processing: s.Processing, Failed: s.Failed, OldestPending: s.OldestPending}
	}
	text, err := json.Marshal(qs)
	if err != nil {
		return fmt.Errorf("write the gauge counts: %w", err)
	}
	if _, err := b.ExecCount(ctx, b.Q.GaugesPut, string(text)); err != nil {
		return fmt.Errorf("write the gauge counts: %w", err)
	}
	return nil
}

// ReadGauges reads the shared gauge counts.
func (b *Base) ReadGauges(ctx context.Context) (driver.GaugeSnapshot, error) {
	var taken Time
	var text string
	if err := b.Read.QueryRowContext(ctx, b.Q.GaugesRead).Scan(&taken, &text); err != nil {
		return driver.GaugeSnapshot{}, fmt.Errorf("read the gauge counts: %w", err)
	}
	var qs []gaugeQueue
	if err := json.Unmarshal([]byte(text), &qs); err != nil {
		return driver.GaugeSnapshot{}, fmt.Errorf("read the gauge counts: %w", err)
	}
	out := driver.GaugeSnapshot{TakenAt: taken.Time, Queues: make([]sluicetype.QueueStats, len(qs))}
	for i, q := range qs {
		out.Queues[i] = sluicetype.QueueStats{Queue: q.Queue, Pending: q.Pending, Processing: q.Processing, Failed: q.Failed, OldestPending: q.OldestPending}
	}
	return out, nil
}
