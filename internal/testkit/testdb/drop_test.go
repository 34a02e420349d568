package testdb

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/driver"
)

// Drop, which every test's cleanup runs, drops a migrated schema whole on
// every database, in one pass: a refused statement is an error (on Galera a
// refused DDL still reaches every node), so the tables a foreign key ties
// together (sluice_attempt_logs to sluice_jobs) must come in an order the
// database accepts.
func TestDropTablesWholeSchema(t *testing.T) {
	ForEach(t, func(t *testing.T, name string) {
		d, tg := OpenURL(t, name)
		ctx := context.Background()
		if err := d.DropTables(ctx, driver.DropTablesParams{Prefix: tg.Prefix}); err != nil {
			t.Fatalf("dropping a migrated schema: %v", err)
		}
		if v, _, err := d.SchemaVersion(ctx); err != nil || v != 0 {
			t.Fatalf("after the drop: schema version %d (%v), want 0: tables are left", v, err)
		}
	})
}
