// Package postgres is the sluice driver for PostgreSQL. It runs database/sql
// over pgx, whose statement cache turns every query into a prepared
// statement after its first use.
//
// Behind a transaction pooler such as PgBouncer (the URL says
// pooler=transaction), every transaction may run on a different server
// session, so the driver keeps no state in a session between statements:
// it sends each query unprepared (pgx's exec mode), takes only
// transaction-scoped locks, and listens for wake-ups on a direct
// connection (Options.ListenURL) or not at all, in which case idle workers
// probe instead.
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
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

//go:embed migrations/*.sql queries/*.sql
var files embed.FS

// Pool sizing. Claims, completions and heartbeats are short statements, so
// a few connections serve many workers (a 100-worker bench keeps 3 busy on
// average); more would only add backend processes competing for the same
// rows. Each process of a cluster has its own pool: at 32, four bench
// processes and their listeners overran PostgreSQL's default
// max_connections of 100, and the refused connections (each a backend
// forked and turned away) and their retries made four processes slower
// than one. At 16, four fit with room to spare. The URL's pool_max_conns
// (sqldriver.PoolParam) sets another size.
const (
	maxConns       = 16
	connectTimeout = 10 * time.Second
)

// queries is PostgreSQL's catalogue: the statements of every dialect and
// those only PostgreSQL runs, in queries/*.sql under their field names.
type queries struct {
	sqldriver.Queries
	KeyHolder                         string // jobs.sql
	CompleteMany, CompleteManyHistory string // complete.sql
	LeaseAcquire                      string // leases.sql
	SchemaExists                      string // schema.sql
}

// Driver is the PostgreSQL driver.
type Driver struct {
	sqldriver.Base
	q          *queries
	migrations []sqldriver.Migration
	// migrateLock keys the advisory lock that keeps migrations of the same
	// prefix apart while letting other prefixes migrate at once.
	migrateLock int64
	// connConfig and channel serve the LISTEN connection; connConfig is
	// nil when the driver does not listen (see listening).
	connConfig *pgx.ConnConfig
	channel    string
	// separate is set when connConfig comes from Options.ListenURL, whose
	// reach the listener checks (see checkListen).
	separate bool
}

var (
	_ driver.Driver = (*Driver)(nil)
	_ driver.Prober = (*Driver)(nil)
)

// Options tune Open.
type Options struct {
	Prefix string // table prefix, default "sluice_"
	// ListenURL, if set, is where the LISTEN connection for wake-ups goes
	// instead of the database URL: a direct connection to the same
	// database, for a database URL that goes through a transaction pooler,
	// which cannot deliver notifications. It must not itself say
	// pooler=transaction. With a pooler and no ListenURL the driver does
	// not listen, and idle workers probe for new jobs instead.
	ListenURL string
}

// PoolerParam is the URL parameter, read and removed by sluice, that says
// the URL leads to a pooler: pooler=transaction for a transaction pooler
// such as PgBouncer with pool_mode=transaction. It is the one switch for
// everything sluice opens with the URL (the driver, the lock backends).
const PoolerParam = "pooler"

// safeExecModes are pgx's query modes that keep no named prepared statement
// on a server session, as a transaction pooler needs; pgx recommends exec.
var safeExecModes = []string{"exec", "cache_describe", "simple_protocol"}

// URLConfig is a PostgreSQL URL parsed by ParseURL.
type URLConfig struct {
	Conn *pgx.ConnConfig
	// TransactionPooling is set by pooler=transaction. Conn then runs
	// queries in a mode that prepares nothing on the server.
	TransactionPooling bool
	// MaxConns is the pool's size: sqldriver.PoolParam, or maxConns.
	MaxConns int
}

// ParseURL parses a postgres:// URL with sluice's own parameters removed
// (PoolerParam, sqldriver.PoolParam) and pgx's query mode set for a pooler. Under
// pooler=transaction it refuses the query modes that would leave prepared
// statements on a server session another client may get next.
func ParseURL(rawURL string) (URLConfig, error) {
	base, query, _ := strings.Cut(rawURL, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return URLConfig{}, fmt.Errorf("postgres URL parameters: %w", err)
	}
	var uc URLConfig
	own := q.Has(PoolerParam) || q.Has(sqldriver.PoolParam)
	if q.Has(PoolerParam) {
		switch v := q.Get(PoolerParam); v {
		case "transaction":
			uc.TransactionPooling = true
		default:
			return URLConfig{}, fmt.Errorf("postgres URL parameter %s=%s: want %s=transaction (a session pooler needs no parameter)", PoolerParam, v, PoolerParam)
		}
		q.Del(PoolerParam)
	}
	if uc.MaxConns, err = sqldriver.PoolSize("postgres", q, maxConns); err != nil {
		return URLConfig{}, err
	}
	if own {
		// Only a query this function rewrote is re-encoded, so a URL
		// without sluice's parameters reaches pgx exactly as given.
		rawURL = base
		if len(q) > 0 {
			rawURL += "?" + q.Encode()
		}
	}
	if uc.TransactionPooling && q.Has("default_query_exec_mode") {
		if m := q.Get("default_query_exec_mode"); !slices.Contains(safeExecModes, m) {
			return URLConfig{}, fmt.Errorf("postgres URL: default_query_exec_mode=%s prepares statements on the server session, which %s=transaction hands to other clients; use one of %s or leave it out",
				m, PoolerParam, strings.Join(safeExecModes, ", "))
		}
	}
	// pgx redacts the password in its parse errors.
	uc.Conn, err = pgx.ParseConfig(rawURL)
	if err != nil {
		return URLConfig{}, fmt.Errorf("postgres: %w", err)
	}
	if uc.TransactionPooling && !q.Has("default_query_exec_mode") {
		uc.Conn.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	return uc, nil
}

// Open connects to the database at url (postgres://USER:PASS@HOST:PORT/DB?params
// or postgresql://...) and checks that the server answers. It does not migrate.
//
// The driver it returns is a driver.Listener when it can listen: always on a
// direct URL, and behind pooler=transaction only with Options.ListenURL.
// Otherwise it is only a driver.Prober, so that idle workers probe.
func Open(url string, opts Options) (driver.Driver, error) {
	q := new(queries)
	prefix, migs, err := sqldriver.LoadFiles(q, files, opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	uc, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg := uc.Conn
	if uc.TransactionPooling {
		dropCancelRequests(cfg)
	}
	listenCfg := cfg
	switch {
	case opts.ListenURL != "":
		lc, err := ParseURL(opts.ListenURL)
		if err != nil {
			return nil, fmt.Errorf("listen URL: %w", err)
		}
		if lc.TransactionPooling {
			return nil, fmt.Errorf("listen URL: %s=transaction: a transaction pooler cannot deliver notifications; give a direct URL to the database", PoolerParam)
		}
		listenCfg = lc.Conn
	case uc.TransactionPooling:
		listenCfg = nil
	}
	// Without a timeout, a host that drops packets would hang Open for
	// minutes; a connect_timeout in the URL still wins.
	for _, c := range []*pgx.ConnConfig{cfg, listenCfg} {
		if c != nil && c.ConnectTimeout == 0 {
			c.ConnectTimeout = connectTimeout
		}
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(uc.MaxConns)
	db.SetMaxIdleConns(uc.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)

	h := fnv.New64a()
	h.Write([]byte("sluice migrate " + prefix))
	d := &Driver{
		Base: sqldriver.Base{
			Dialect: sqldriver.Dialect{
				Placeholder:     func(n int) string { return fmt.Sprintf("$%d", n) },
				Duration:        func(d time.Duration) any { return sqldriver.Micros(d) },
				Time:            func(t time.Time) any { return t },
				Transient:       isTransient,
				UniqueViolation: func(err error) bool { return sqlState(err) == "23505" },
			},
			Read: db, Write: db, Q: &q.Queries,
		},
		q:           q,
		migrations:  migs,
		migrateLock: int64(h.Sum64()),
		connConfig:  listenCfg,
		channel:     prefix + "jobs",
		separate:    opts.ListenURL != "",
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout+5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect to %s database %q: %w", hosts(cfg), cfg.Database, err)
	}
	if listenCfg == nil {
		return d, nil
	}
	return listening{d}, nil
}

// listening is the driver that pushes wake-ups. Workers type-assert
// driver.Listener to choose between waiting for wake-ups and probing, so a
// driver that cannot listen must not have the method at all.
type listening struct{ *Driver }

var _ driver.Listener = listening{}

// hosts lists the hosts a connection tries, in order: one, or every host
// of a multi-host URL (host1:port1,host2:port2,...). pgx keeps a fallback
// per host and TLS mode (sslmode=prefer tries TLS, then plain), so a host
// is named once.
func hosts(cfg *pgx.ConnConfig) string {
	out := []string{fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if h := fmt.Sprintf("%s:%d", f.Host, f.Port); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return strings.Join(out, ",")
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

// Statements lists the catalogue's statements with their files, so that
// the conformance suite (driver/drivertest) prepares every one against
// the database.
func (d *Driver) Statements() ([]sqldriver.Statement, error) {
	return sqldriver.Statements(d.q, files, "driver/postgres")
}

// Dialect is PostgreSQL's spelling.
func (d *Driver) Dialect() driver.Dialect {
	return driver.Dialect{Name: "postgres", Placeholder: d.Placeholder, QuoteIdent: driver.QuoteANSI, RowCompare: true, SkipDuplicates: driver.SkipDuplicatesANSI}
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
func (d *Driver) Migrate(ctx context.Context) (driver.MigrateResult, error) {
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", d.migrateLock); err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: take migration lock: %w", err)
	}
	// A failed statement would abort the transaction, so the version table
	// is looked up rather than read and its absence caught.
	var exists bool
	if err := tx.QueryRowContext(ctx, d.q.SchemaExists).Scan(&exists); err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: look up version table: %w", err)
	}
	cur := 0
	if exists {
		err := tx.QueryRowContext(ctx, d.q.SchemaVersion).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return driver.MigrateResult{}, fmt.Errorf("migrate: read version: %w", err)
		}
	}
	return sqldriver.ApplyMigrationsTx(ctx, tx, d.migrations, cur, d.q.SchemaSet)
}

// Runnable reports whether a claim on the queue (and type, if set) would
// find a job now. Workers ask it only when the driver does not listen.
func (d *Driver) Runnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	return d.ProbeRunnable(ctx, p)
}

// AcquireLease takes or renews a named lease with one upsert.
func (d *Driver) AcquireLease(ctx context.Context, p driver.LeaseParams) (sluicetype.LeaseState, error) {
	return d.UpsertLease(ctx, p, d.q.LeaseAcquire)
}
