package sqlcommon

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/sluicehq/sluice/driver"
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
