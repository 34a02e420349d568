// Package postgres is the sluice driver for PostgreSQL. It runs database/sql
// over pgx, whose statement cache turns every query into a prepared
// statement after its first use.
//
// The hot paths are one statement each: a batch insert unnests arrays, a
// claim is an UPDATE over a SKIP LOCKED subquery on a partial index, and a
// batch completion joins the jobs to an unnested list of outcomes.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/sqlcommon"
)

//go:embed migrations/*.sql queries/*.sql
var files embed.FS

// Pool sizing. Claims, completions and heartbeats are short statements, so
// a few dozen connections serve many workers; more would only add backend
// processes competing for the same rows.
const (
	maxConns       = 32
	connectTimeout = 10 * time.Second
)

// Driver is the PostgreSQL driver.
type Driver struct {
	sqlcommon.Base
	migrations []driver.Migration
	// migrateLock keys the advisory lock that keeps migrations of the same
	// prefix apart while letting other prefixes migrate at once.
	migrateLock int64
	// connConfig and channel serve the LISTEN connection.
	connConfig *pgx.ConnConfig
	channel    string
}

var _ driver.Driver = (*Driver)(nil)

// Options tune Open.
type Options struct {
	Prefix string // table prefix, default "sluice_"
}

// Open connects to the database at url (postgres://USER:PASS@HOST:PORT/DB?params
// or postgresql://...) and checks that the server answers. It does not migrate.
func Open(url string, opts Options) (*Driver, error) {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = driver.DefaultPrefix
	}
	if err := driver.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	q, err := driver.LoadQueries(files, "queries", prefix, append(sqlcommon.Required,
		"insert", "key_holder", "claim", "claim_type", "complete_batch", "complete_batch_history", "lease_acquire", "schema_set", "schema_exists")...)
	if err != nil {
		return nil, err
	}
	migs, err := driver.LoadMigrations(files, "migrations", prefix)
	if err != nil {
		return nil, err
	}
	// pgx redacts the password in its parse errors.
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// Without a timeout, a host that drops packets would hang Open for
	// minutes; a connect_timeout in the URL still wins.
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)

	h := fnv.New64a()
	h.Write([]byte("sluice migrate " + prefix))
	d := &Driver{
		Base: sqlcommon.Base{
			Dialect: sqlcommon.Dialect{
				Placeholder:     func(n int) string { return fmt.Sprintf("$%d", n) },
				Duration:        func(d time.Duration) any { return driver.Micros(d) },
				Time:            func(t time.Time) any { return t },
				Transient:       isTransient,
				UniqueViolation: func(err error) bool { return sqlState(err) == "23505" },
			},
			Read: db, Write: db, Q: q,
		},
		migrations:  migs,
		migrateLock: int64(h.Sum64()),
		connConfig:  cfg,
		channel:     prefix + "jobs",
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout+5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d database %q: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return d, nil
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// isTransient matches serialization failures and deadlocks: the server
// aborted the statement to let another one through, and a retry succeeds.
func isTransient(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01":
		return true
	}
	return false
}

// Name is "postgres".
func (d *Driver) Name() string { return "postgres" }

// Dialect is PostgreSQL's spelling.
func (d *Driver) Dialect() driver.Dialect {
	return driver.Dialect{Name: "postgres", Placeholder: d.Placeholder, QuoteIdent: driver.QuoteANSI, RowCompare: true}
}

// Close closes the pool.
func (d *Driver) Close() error { return d.Write.Close() }

// SchemaVersion reports the current and the newest known schema version.
func (d *Driver) SchemaVersion(ctx context.Context) (int, int, error) {
	return d.Base.SchemaVersion(ctx, len(d.migrations), func(err error) bool {
		return sqlState(err) == "42P01" // undefined_table
	})
}

// Migrate applies pending migrations in one transaction. DDL is
// transactional in PostgreSQL, so a failed upgrade leaves no trace, and the
// advisory lock makes a second migrating process wait and then find the
// work done.
func (d *Driver) Migrate(ctx context.Context) (int, error) {
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", d.migrateLock); err != nil {
		return 0, fmt.Errorf("migrate: take migration lock: %w", err)
	}
	// A failed statement would abort the transaction, so the version table
	// is looked up rather than read and its absence caught.
	var exists bool
	if err := tx.QueryRowContext(ctx, d.Q["schema_exists"]).Scan(&exists); err != nil {
		return 0, fmt.Errorf("migrate: look up version table: %w", err)
	}
	cur := 0
	if exists {
		err := tx.QueryRowContext(ctx, d.Q["schema_version"]).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("migrate: read version: %w", err)
		}
	}
	// On failure the rollback undoes every step, so the version is still cur.
	v, err := sqlcommon.ApplyMigrations(ctx, tx, d.migrations, cur, d.Q["schema_set"])
	if err != nil {
		return cur, err
	}
	if err := tx.Commit(); err != nil {
		return cur, fmt.Errorf("migrate: commit: %w", err)
	}
	return v, nil
}

// AcquireLease takes or renews a named lease with one upsert.
func (d *Driver) AcquireLease(ctx context.Context, p driver.LeaseParams) (driver.Lease, error) {
	return d.UpsertLease(ctx, p)
}
