// Package testdb gives tests a migrated driver on each real database, in
// tables under a fresh prefix so that tests never see each other's rows.
//
// The servers come from SLUICE_TEST_MYSQL and SLUICE_TEST_POSTGRES (defaults:
// the local MariaDB and PostgreSQL, database sluice_test). A server that
// cannot be reached skips its tests with a loud message, unless
// SLUICE_TEST_REQUIRE_ALL=1 (set by CI), which turns the skip into a failure.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

// Names lists the drivers every suite runs against.
var Names = []string{"sqlite", "mysql", "postgres"}

// ForEach runs fn as a parallel subtest on each database in Names.
func ForEach(t *testing.T, fn func(t *testing.T, name string)) {
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, name)
		})
	}
}

// ForEachDriver is ForEach with a fresh migrated driver (Open) on each
// database.
func ForEachDriver(t *testing.T, fn func(t *testing.T, d driver.Driver)) {
	ForEach(t, func(t *testing.T, name string) { fn(t, Open(t, name)) })
}

// URL returns the database URL for a driver name. SQLite gets a file in dir.
func URL(name, dir string) string {
	switch name {
	case "mysql":
		return env("SLUICE_TEST_MYSQL", "mysql://root@127.0.0.1:3306/sluice_test")
	case "postgres":
		return env("SLUICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/sluice_test")
	default:
		return "sqlite:" + dir + "/sluice.db"
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// RequireAll reports whether an unreachable server must fail the test run.
func RequireAll() bool { return os.Getenv("SLUICE_TEST_REQUIRE_ALL") == "1" }

// Prefix returns a fresh table prefix.
func Prefix() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "t" + hex.EncodeToString(b) + "_"
}

// Open returns a migrated driver for name under a fresh prefix, closed and
// dropped when the test ends. It skips (or fails in CI) when the server is down.
func Open(t testing.TB, name string) driver.Driver {
	t.Helper()
	d, _ := OpenURL(t, name)
	return d
}

// OpenURL is Open that also returns the URL and prefix, for tests that start
// sluice processes on the same tables: the prefix is passed as SLUICE_PREFIX.
func OpenURL(t testing.TB, name string) (driver.Driver, Target) {
	t.Helper()
	tg := Target{URL: URL(name, t.TempDir()), Prefix: Prefix(), Name: name}
	var d driver.Driver
	var err error
	// A server that timed out is tried twice more: a shared server that a
	// loaded machine starves took over 10 s (the driver's connect timeout)
	// to answer a startup message in a CI run, and a test's set-up is no
	// judgement of the product. A refused connection fails at once. Each
	// try migrates under a fresh prefix: MySQL's DDL does not roll back, so
	// a migration cut short leaves tables and constraints that the same
	// migration run again collides with ("Duplicate CHECK constraint").
	for try := 1; ; try++ {
		d, err = openMigrated(tg)
		if err == nil || try == 3 || !timedOut(err) {
			break
		}
		t.Logf("%s server timed out (try %d of 3), trying again under a fresh prefix: %v", name, try, err)
		tg.Prefix = Prefix()
	}
	if err != nil {
		msg := fmt.Sprintf("%s server unreachable at %s: %v", name, dburl.Redact(tg.URL), err)
		if RequireAll() || name == "sqlite" {
			t.Fatalf("%s (SLUICE_TEST_REQUIRE_ALL=1: every driver is required)", msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING %s TESTS: %s\n", strings.ToUpper(name), msg)
		t.Skip(msg)
	}
	t.Cleanup(func() {
		Drop(d, tg.Prefix)
		d.Close()
	})
	return d, tg
}

// openMigrated opens tg's database and migrates its tables.
func openMigrated(tg Target) (driver.Driver, error) {
	d, err := dburl.Open(tg.URL, dburl.Options{Prefix: tg.Prefix})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), MigrateWait)
	defer cancel()
	if _, err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// MigrateWait bounds a test's migration of its fresh tables: a CI run at
// load 40, with the race lane's drivertest creating tables in parallel,
// took over 30 s for one MariaDB migration. Set-up is no judgement of
// the product.
const MigrateWait = 2 * time.Minute

// timedOut tells a server that did not answer in time from one that
// refused.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout")
}

// Target says where a test's tables live.
type Target struct {
	Name   string // driver name
	URL    string
	Prefix string
}

// Drop removes every table under prefix (see driver.Driver.DropTables).
// Cleanup is best effort: a failure leaves tables behind under a prefix
// that no other test uses.
func Drop(d driver.Driver, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d.DropTables(ctx, driver.DropTablesParams{Prefix: prefix})
}

// ScratchDatabase names a database of the test's own on the MySQL and
// PostgreSQL test servers, for a script that creates it there (the bench
// scripts), so that a bench run or another CI run at the same time is
// untouched; it is dropped on both when the test ends. tag says whose it
// is in a listing of the servers' databases.
func ScratchDatabase(t testing.TB, tag string) string {
	t.Helper()
	db := "sluice_" + tag + "_" + strings.TrimSuffix(Prefix(), "_")
	for _, name := range []string{"mysql", "postgres"} {
		d, err := dburl.Open(URL(name, ""), dburl.Options{})
		if err != nil {
			t.Fatalf("open the %s test server to drop %s later: %v", name, db, err)
		}
		t.Cleanup(func() {
			defer d.Close()
			q := "DROP DATABASE IF EXISTS " + db
			if name == "postgres" {
				q += " WITH (FORCE)" // the script's last connections may linger
			}
			if _, err := d.DB().ExecContext(context.Background(), q); err != nil {
				t.Errorf("drop the scratch database %s on %s: %v", db, name, err)
			}
		})
	}
	return db
}
