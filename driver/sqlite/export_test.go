package sqlite

import (
	"context"

	"github.com/sluicehq/sluice/driver/internal/sqldriver"
)

// MigrateTo applies the migrations up to version to fresh tables, so that
// tests can upgrade a schema that holds data.
func MigrateTo(ctx context.Context, d *Driver, version int) error {
	_, err := sqldriver.ApplyMigrations(ctx, d.Write, d.migrations[:version], 0, d.q.SchemaSet)
	return err
}

// ClaimQuery is the plain claim's statement for types.
func ClaimQuery(d *Driver, types []string) string {
	return d.claimQuery(types)
}
