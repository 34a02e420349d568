package sqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// ApplyMigrations runs every migration newer than current on q, recording
// each version as it lands, so that an interrupted upgrade resumes where it
// stopped. The caller holds the database's migration lock.
func ApplyMigrations(ctx context.Context, q driver.Querier, migs []Migration, current int, setVersion string) (int, error) {
	latest := len(migs)
	if current > latest {
		return current, fmt.Errorf("schema version %d, this binary knows up to %d: %w", current, latest, sluicetype.ErrSchemaTooNew)
	}
	for _, m := range migs[current:] {
		stmts := m.Statements
		if m.Prepare != nil {
			before, err := m.Prepare(ctx, q)
			if err != nil {
				return current, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			stmts = append(before, stmts...)
		}
		for _, stmt := range stmts {
			if _, err := q.ExecContext(ctx, stmt); err != nil {
				return current, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
		}
		if _, err := q.ExecContext(ctx, setVersion, m.Version); err != nil {
			return current, fmt.Errorf("record schema version %d: %w", m.Version, err)
		}
		current = m.Version
	}
	return current, nil
}

// ApplyMigrationsTx is ApplyMigrations in tx, committed at the end, for the
// databases whose DDL is transactional. On failure the rollback undoes
// every step, so the version reported is still current.
func ApplyMigrationsTx(ctx context.Context, tx *sql.Tx, migs []Migration, current int, setVersion string) (driver.MigrateResult, error) {
	res := driver.MigrateResult{From: current, To: current}
	v, err := ApplyMigrations(ctx, tx, migs, current, setVersion)
	if err != nil {
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("migrate: commit: %w", err)
	}
	res.To = v
	return res, nil
}
