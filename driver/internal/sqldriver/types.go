package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// SyncTypes writes the rows of p.Types that sluice_types does not already
// hold as given, one upsert each, in type order, and returns how many it
// wrote. Every process that starts workers calls it with its config, so
// the common case, nothing changed, is one read and no write: processes
// starting together do not queue on the rows' locks. Rows of types missing
// from p.Types stay, since another process's config may define them.
func (b *Base) SyncTypes(ctx context.Context, p driver.SyncTypesParams) (int, error) {
	want := append([]driver.TypeSettings(nil), p.Types...)
	for _, s := range want {
		if err := s.Check(); err != nil {
			return 0, fmt.Errorf("sync type settings: %w", err)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Type < want[j].Type })
	have, err := b.listTypes(ctx)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, s := range want {
		if have[s.Type] == s {
			continue
		}
		err := RetryTransient(ctx, b.Transient, func() error {
			_, err := b.Write.ExecContext(ctx, b.Q.TypesPut, s.Type, s.Queue, s.MaxAttempts, s.Dedupe)
			return err
		})
		if err != nil {
			return written, fmt.Errorf("sync type settings of %s: %w", s.Type, err)
		}
		written++
	}
	return written, nil
}

func (b *Base) listTypes(ctx context.Context) (map[string]driver.TypeSettings, error) {
	out := map[string]driver.TypeSettings{}
	err := QueryEach(ctx, b.Read, "read type settings", b.Q.TypesList, nil, func(rows *sql.Rows) error {
		var s driver.TypeSettings
		err := rows.Scan(&s.Type, &s.Queue, &s.MaxAttempts, &s.Dedupe)
		out[s.Type] = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ServeTypes stamps served_at on the rows of p.Types, one short UPDATE
// each: a process serves a handful of types, once a minute.
func (b *Base) ServeTypes(ctx context.Context, p driver.ServeTypesParams) error {
	for _, typ := range p.Types {
		err := RetryTransient(ctx, b.Transient, func() error {
			_, err := b.Write.ExecContext(ctx, b.Q.TypesServe, typ)
			return err
		})
		if err != nil {
			return fmt.Errorf("mark type %s served: %w", typ, err)
		}
	}
	return nil
}

// UnservedTypes counts pending jobs of the types not served within p.Within.
func (b *Base) UnservedTypes(ctx context.Context, p driver.UnservedTypesParams) ([]sluicetype.TypeCount, error) {
	return QueryAll(ctx, b.Read, "count jobs waiting for a handler", b.Q.TypesUnserved, []any{b.Duration(-p.Within)},
		func(rows *sql.Rows) (sluicetype.TypeCount, error) {
			var c sluicetype.TypeCount
			err := rows.Scan(&c.Type, &c.Pending)
			return c, err
		})
}

// ServeQueues stamps served_at on the rows of p.Queues in sluice_queues,
// writing a row (not paused) for a queue without one, one short upsert
// each: a process claims from a handful of queues, once a minute.
func (b *Base) ServeQueues(ctx context.Context, p driver.ServeQueuesParams) error {
	for _, q := range p.Queues {
		err := RetryTransient(ctx, b.Transient, func() error {
			_, err := b.Write.ExecContext(ctx, b.Q.QueuesServe, q)
			return err
		})
		if err != nil {
			return fmt.Errorf("mark queue %s served: %w", q, err)
		}
	}
	return nil
}

// ServedQueues lists the queues served within p.Within, in name order.
func (b *Base) ServedQueues(ctx context.Context, p driver.UnservedQueuesParams) ([]string, error) {
	return QueryAll(ctx, b.Read, "read served queues", b.Q.QueuesServed, []any{b.Duration(-p.Within)},
		func(rows *sql.Rows) (string, error) {
			var q string
			err := rows.Scan(&q)
			return q, err
		})
}

// UnservedQueues counts pending jobs of the queues not served within p.Within.
func (b *Base) UnservedQueues(ctx context.Context, p driver.UnservedQueuesParams) ([]sluicetype.QueueCount, error) {
	return QueryAll(ctx, b.Read, "count jobs in unserved queues", b.Q.QueuesUnserved, []any{b.Duration(-p.Within)},
		func(rows *sql.Rows) (sluicetype.QueueCount, error) {
			var c sluicetype.QueueCount
			err := rows.Scan(&c.Queue, &c.Pending)
			return c, err
		})
}
