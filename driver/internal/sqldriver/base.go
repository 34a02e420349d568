// Package sqldriver is the SQL implementation of driver.Driver; the three
// bundled drivers (driver/mysql, driver/postgres, driver/sqlite) are its
// variations. It holds
//
//   - Base, the driver methods whose logic is the same everywhere and
//     differ only in SQL text, in one file per area of queries/*.sql
//     (jobs.go, claim.go, complete.go, leases.go, stats.go, schema.go,
//     ...); the drivers embed it and override the methods where a
//     database has a better shape (batched inserts, claims, completions);
//     and ClaimFair (claim.go), the fair and limited claim, whose one
//     step that differs by database is Base.ClaimPicked;
//   - the SQL catalogue: Queries, the typed set of statements every
//     dialect provides, LoadQueries, which fills it and a driver's own
//     additions from the -- name: sections of queries/*.sql, and the
//     statements all three dialects run verbatim (queries/ here; see
//     Queries for which statements are shared and which are written per
//     dialect);
//   - the markers a statement holds: JobColumnsMarker, the job column
//     list that jobColumns defines once for the SQL and for
//     JobScanner.Dest; ListMarker, a list of placeholders (List, Bind);
//     TypesMarker, a claim's or probe's type filter (TypeFilter);
//   - the toolbox: JobScanner, Time, QueryAll and its kin, ExecCount,
//     RetryTransient, migrations and the table prefix.
//
// It is internal to package driver's tree: it changes with the bundled
// drivers and promises nothing to anyone else.
package sqldriver

import (
	"context"
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Dialect is what Base needs to know about a database beyond its SQL files.
type Dialect struct {
	// Placeholder renders the n-th (1-based) bind parameter.
	Placeholder func(n int) string
	// Duration renders a duration argument for SQL that adds it to the
	// database clock.
	Duration func(time.Duration) any
	// Time renders an absolute time argument.
	Time func(time.Time) any
	// Transient reports errors worth retrying: deadlocks, serialization
	// failures, a busy database.
	Transient func(error) bool
	// UniqueViolation reports a duplicate-key error.
	UniqueViolation func(error) bool
}

// Base implements the driver methods whose logic is the same everywhere.
type Base struct {
	Dialect
	// Read serves queries, Write serves changes. They are the same pool
	// except on SQLite, which has one writer connection.
	Read, Write *sql.DB
	// Q is the dialect's statements, the Queries in its own struct.
	Q *Queries
	// PurgeBound, where set, gives the purge query the highest id it need
	// read, as the argument before the limit; 0 means none is due. MySQL
	// sets it: without a partial index its purge reads rows in id order.
	PurgeBound func(ctx context.Context, status sluicetype.Status, olderThan time.Duration) (int64, error)
	// ClaimPicked is the one step of the fair and limited claim (ClaimFair,
	// claim.go) that differs by database: it moves the picked pending jobs
	// to processing under p's lease and returns them. Nil is one UPDATE ...
	// RETURNING, which PostgreSQL and SQLite run; MySQL, which has no
	// RETURNING, sets its own.
	ClaimPicked func(ctx context.Context, tx *sql.Tx, p driver.ClaimParams, ids []int64) ([]sluicetype.JobRow, error)
}

// ExecCount runs q on the writer, retried whole on transient errors, and
// returns the number of rows it changed.
func (b *Base) ExecCount(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := RetryTransient(ctx, b.Transient, func() error {
		res, err := b.Write.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// DB is the pool for callers' own transactions.
func (b *Base) DB() *sql.DB { return b.Write }

// InTx runs fn in tx when the caller gave one (EnqueueTx), or else in a
// write transaction of its own, committed on success and retried whole on
// transient errors.
func (b *Base) InTx(ctx context.Context, tx *sql.Tx, fn func(*sql.Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return RetryTransient(ctx, b.Transient, func() error {
		own, err := b.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer own.Rollback()
		if err := fn(own); err != nil {
			return err
		}
		return own.Commit()
	})
}

// InList expands the ListMarker in q to n placeholders numbered from start.
func (b *Base) InList(q string, start, n int) string {
	return List(q, start, n, b.Placeholder)
}

// IsTransient reports errors worth retrying whole.
func (b *Base) IsTransient(err error) bool { return b.Transient(err) }
