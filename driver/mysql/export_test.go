package mysql

import (
	"context"

	"github.com/sluicehq/sluice/driver/internal/sqldriver"
)

// SetConsecutiveIDs lets tests take the insert path that servers with
// innodb_autoinc_lock_mode = 2 use, which the test server may not run.
func SetConsecutiveIDs(d *Driver, v bool) { d.consecutiveIDs = v }

// MigrateTo applies the migrations up to version to fresh tables, so that
// tests can upgrade a schema that holds data.
func MigrateTo(ctx context.Context, d *Driver, version int) error {
	_, err := sqldriver.ApplyMigrations(ctx, d.DB(), d.migrations[:version], 0, d.q.SchemaSet)
	return err
}

// ApplyMigration runs migration version alone, as a run that stopped
// after it but before recording it would run it again.
func ApplyMigration(ctx context.Context, d *Driver, version int) error {
	_, err := sqldriver.ApplyMigrations(ctx, d.DB(), d.migrations[:version], version-1, d.q.SchemaSet)
	return err
}
