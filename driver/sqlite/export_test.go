package sqlite

import (
	"context"

	"github.com/sluicehq/sluice/driver/sqlcommon"
)

// MigrateTo applies the migrations up to version to fresh tables, so that
// tests can upgrade a schema that holds data.
func MigrateTo(ctx context.Context, d *Driver, version int) error {
	_, err := sqlcommon.ApplyMigrations(ctx, d.Write, d.migrations[:version], 0, d.Q["schema_set"])
	return err
}
