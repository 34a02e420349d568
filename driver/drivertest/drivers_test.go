package drivertest_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/driver/sqlite"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// The plan and probe checks type-assert these interfaces and fail on a
// driver without them; here a driver that stopped implementing one fails
// to compile.
var (
	_ drivertest.Querier = (*sqlite.Driver)(nil)
	_ drivertest.Querier = (*mysql.Driver)(nil)
	_ drivertest.Querier = (*postgres.Driver)(nil)
	_ driver.Prober      = (*sqlite.Driver)(nil)
	_ driver.Prober      = (*mysql.Driver)(nil)
	_ driver.Prober      = (*postgres.Driver)(nil)
)

func TestSQLite(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) driver.Driver { return testdb.Open(t, "sqlite") })
}

func TestMySQL(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) driver.Driver { return testdb.Open(t, "mysql") })
}

// TestMySQLUpdateClaim runs the suite's claim areas on the claim path for
// servers without SKIP LOCKED (older MySQL and MariaDB, TiDB), forced on
// the local server; the rest of the driver is the same as TestMySQL's.
func TestMySQLUpdateClaim(t *testing.T) {
	drivertest.ExerciseClaims(t, openMySQLUpdateClaim)
}

func TestPostgres(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) driver.Driver { return testdb.Open(t, "postgres") })
}

// openMySQLUpdateClaim is testdb.Open with an option testdb has no knob for.
func openMySQLUpdateClaim(t *testing.T) driver.Driver {
	t.Helper()
	prefix := testdb.Prefix()
	d, err := mysql.Open(testdb.URL("mysql", ""), mysql.Options{Prefix: prefix, ForceUpdateClaim: true})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), testdb.MigrateWait)
		defer cancel()
		if _, err = d.Migrate(ctx); err != nil {
			d.Close()
		}
	}
	if err != nil {
		if testdb.RequireAll() {
			t.Fatalf("mysql: %v", err)
		}
		t.Skipf("mysql server unreachable: %v", err)
	}
	if d.SkipLocked() {
		t.Fatal("ForceUpdateClaim left the SKIP LOCKED claim on")
	}
	t.Cleanup(func() {
		testdb.Drop(d, prefix)
		d.Close()
	})
	return d
}
