package postgres

import (
	"context"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
)

// MigrateTo applies the migrations up to version to fresh tables, so that
// tests can upgrade a schema that holds data.
func MigrateTo(ctx context.Context, dd driver.Driver, version int) error {
	d := dd.(listening).Driver
	_, err := sqldriver.ApplyMigrations(ctx, d.Write, d.migrations[:version], 0, d.q.SchemaSet)
	return err
}
