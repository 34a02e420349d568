package sqlcommon

import (
	"context"
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
		err := driver.RetryTransient(ctx, b.Transient, func() error {
			_, err := b.Write.ExecContext(ctx, b.Q["types_put"], s.Type, s.Queue, s.MaxAttempts, s.Dedupe)
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
	rows, err := b.Read.QueryContext(ctx, b.Q["types_list"])
	if err != nil {
		return nil, fmt.Errorf("read type settings: %w", err)
	}
	defer rows.Close()
	out := map[string]driver.TypeSettings{}
	for rows.Next() {
		var s driver.TypeSettings
		if err := rows.Scan(&s.Type, &s.Queue, &s.MaxAttempts, &s.Dedupe); err != nil {
			return nil, fmt.Errorf("read type settings: %w", err)
		}
		out[s.Type] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read type settings: %w", err)
	}
	return out, nil
}

// ServeTypes stamps served_at on the rows of p.Types, one short UPDATE
// each: a process serves a handful of types, once a minute.
func (b *Base) ServeTypes(ctx context.Context, p driver.ServeTypesParams) error {
	for _, typ := range p.Types {
		err := driver.RetryTransient(ctx, b.Transient, func() error {
			_, err := b.Write.ExecContext(ctx, b.Q["types_serve"], typ)
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
	rows, err := b.Read.QueryContext(ctx, b.Q["types_unserved"], b.Duration(-p.Within))
	if err != nil {
		return nil, fmt.Errorf("count jobs waiting for a handler: %w", err)
	}
	defer rows.Close()
	var out []sluicetype.TypeCount
	for rows.Next() {
		var c sluicetype.TypeCount
		if err := rows.Scan(&c.Type, &c.Pending); err != nil {
			return nil, fmt.Errorf("count jobs waiting for a handler: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs waiting for a handler: %w", err)
	}
	return out, nil
}
