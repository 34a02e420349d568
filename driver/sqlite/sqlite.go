// Package sqlite is the sluice driver for SQLite, the embedded default. It
// uses modernc.org/sqlite, a pure-Go build of SQLite, so the sluice binary
// needs no C toolchain.
//
// Writes go through one connection that starts every transaction with
// BEGIN IMMEDIATE: inside one process they queue in Go instead of failing
// with SQLITE_BUSY, and across processes the busy timeout makes them wait.
// Reads use a separate pool, which WAL mode lets run beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

//go:embed migrations/*.sql queries/*.sql
var files embed.FS

// queries is SQLite's catalogue: the statements of every dialect and
// those only SQLite runs, in queries/*.sql under their field names.
type queries struct {
	sqldriver.Queries
	KeyHolder       string // jobs.sql
	CompleteSuccess string // complete.sql
	LeaseAcquire    string // leases.sql
}

// Driver is the SQLite driver.
type Driver struct {
	sqldriver.Base
	q          *queries
	migrations []sqldriver.Migration
	memory     bool
	// claims holds the plain claim's statements, one per set of types,
	// prepared once on the writer (jobs.go, claimStmt).
	claims struct {
		sync.Mutex
		stmts map[string]*sql.Stmt
	}
}

var _ driver.Driver = (*Driver)(nil)

// busyTimeout is how long a statement waits for another connection's
// write lock before it fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Options tune Open.
type Options struct {
	Prefix string // table prefix, default "sluice_"
}

// Open opens the database at path (":memory:" for a private in-memory one).
// Extra modernc DSN parameters may follow a '?', such as _pragma=synchronous(FULL).
func Open(path string, opts Options) (*Driver, error) {
	q := new(queries)
	_, migs, err := sqldriver.LoadFiles(q, files, opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	file, rawQuery, _ := strings.Cut(path, "?")
	if file == "" {
		return nil, errors.New("sqlite: empty path; use sqlite:PATH or sqlite::memory:")
	}
	memory := file == ":memory:"
	if !memory {
		if dir := filepath.Dir(file); dir != "." {
			if _, err := os.Stat(dir); err != nil {
				return nil, fmt.Errorf("sqlite: directory of %s: %w", file, err)
			}
		}
	}
	extra, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("sqlite: parameters of %q: %w", path, err)
	}
	if extra.Has(sqldriver.PoolParam) {
		// modernc ignores a parameter it does not know: say so rather than
		// let a cap the user asked for silently not apply.
		return nil, fmt.Errorf("sqlite URL parameter %s: SQLite has one writer connection and a reader pool of its own; the parameter is for MySQL and PostgreSQL", sqldriver.PoolParam)
	}

	// NORMAL is durable against process crashes in WAL mode; a power cut
	// may lose the last transactions but never corrupts the file. Pass
	// _pragma=synchronous(FULL) to trade speed for the last commits.
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	if !memory {
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", "synchronous(NORMAL)")
	}
	for k, vs := range extra {
		for _, v := range vs {
			params.Add(k, v)
		}
	}
	writeParams := url.Values{}
	for k, vs := range params {
		writeParams[k] = vs
	}
	writeParams.Set("_txlock", "immediate")

	name := "file:" + file
	if memory {
		// A private in-memory database lives in one connection, so the
		// reader and the writer must be the same pool.
		name = "file::memory:"
	}
	w, err := sql.Open("sqlite", name+"?"+writeParams.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", file, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r := w
	if !memory {
		if r, err = sql.Open("sqlite", name+"?"+params.Encode()); err != nil {
			w.Close()
			return nil, fmt.Errorf("sqlite: open %s: %w", file, err)
		}
		r.SetMaxOpenConns(4)
		r.SetMaxIdleConns(4)
	}
	d := &Driver{
		Base: sqldriver.Base{
			Dialect: sqldriver.Dialect{
				// Numbered, so that a list or type filter may follow
				// the numbered parameters of a statement (Claim).
				Placeholder:     func(n int) string { return "?" + strconv.Itoa(n) },
				Duration:        modifier,
				Time:            func(t time.Time) any { return t.UTC().Format(sqldriver.TextTimeLayout) },
				Transient:       isBusy,
				UniqueViolation: isUnique,
			},
			Read: r, Write: w, Q: &q.Queries,
		},
		q:          q,
		migrations: migs,
		memory:     memory,
	}
	if err := pingWhileBusy(w); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", file, err)
	}
	return d, nil
}

// pingWhileBusy opens the first connection, retrying while the file is
// busy. The connection's pragmas switch a new file to WAL, and SQLite
// answers SQLITE_BUSY at once, without its busy handler, when another
// process is switching or recovering the same file: three `sluice
// migrate` started together on a new file failed so. A failed connection
// is discarded by the pool, so each try runs the pragmas afresh; it gives
// up once it has slept the busy timeout it would otherwise have waited.
func pingWhileBusy(db *sql.DB) error {
	wait := 10 * time.Millisecond
	for slept := time.Duration(0); ; slept += wait {
		err := db.PingContext(context.Background())
		if err == nil || !isBusy(err) || slept >= busyTimeout {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// modifier renders a duration as a strftime modifier such as "+1.500 seconds".
func modifier(d time.Duration) any {
	return fmt.Sprintf("%+.3f seconds", d.Seconds())
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

func isBusy(err error) bool {
	c := sqliteCode(err) & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// Name is "sqlite".
func (d *Driver) Name() string { return "sqlite" }

// Statements lists the catalogue's statements with their files, so that
// the conformance suite (driver/drivertest) prepares every one against
// the database.
func (d *Driver) Statements() ([]sqldriver.Statement, error) {
	return sqldriver.Statements(d.q, files, "driver/sqlite")
}

// Dialect is SQLite's spelling: times are text, and a row comparison
// is an index range.
func (d *Driver) Dialect() driver.Dialect {
	return driver.Dialect{Name: "sqlite", Placeholder: d.Placeholder, QuoteIdent: driver.QuoteANSI, RowCompare: true, TextTimes: true, SkipDuplicates: driver.SkipDuplicatesANSI}
}

// Close closes the prepared claims and both pools.
func (d *Driver) Close() error {
	var err error
	d.claims.Lock()
	for _, st := range d.claims.stmts {
		err = errors.Join(err, st.Close())
	}
	d.claims.stmts = nil
	d.claims.Unlock()
	err = errors.Join(err, d.Write.Close())
	if d.Read != d.Write {
		err = errors.Join(err, d.Read.Close())
	}
	return err
}

// SchemaVersion reports the current and the newest known schema version.
func (d *Driver) SchemaVersion(ctx context.Context) (int, int, error) {
	return d.Base.SchemaVersion(ctx, len(d.migrations), func(err error) bool {
		return strings.Contains(err.Error(), "no such table")
	})
}

// Migrate applies pending migrations in one IMMEDIATE transaction, which
// also keeps two migrating processes apart.
func (d *Driver) Migrate(ctx context.Context) (driver.MigrateResult, error) {
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	cur := 0
	err = tx.QueryRowContext(ctx, d.q.SchemaVersion).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table") {
		return driver.MigrateResult{}, fmt.Errorf("migrate: read version: %w", err)
	}
	return sqldriver.ApplyMigrationsTx(ctx, tx, d.migrations, cur, d.q.SchemaSet)
}

// AcquireLease takes or renews a named lease.
func (d *Driver) AcquireLease(ctx context.Context, p driver.LeaseParams) (sluicetype.LeaseState, error) {
	return d.UpsertLease(ctx, p, d.q.LeaseAcquire)
}

// Complete applies outcomes in one transaction. Plain successes (no
// result, no error, no history entry) of one lease token share one statement; the rest take
// one prepared statement each, which in-process SQLite runs cheaply.
func (d *Driver) Complete(ctx context.Context, p driver.CompleteParams) ([]int64, error) {
	cs := p.Completions
	plain := map[string][]int64{}
	var rest []driver.Completion
	for _, c := range cs {
		if c.Status == sluicetype.StatusSuccess && !c.Refund && c.Error == nil && c.Result == nil && c.Attempt == nil {
			plain[c.Token] = append(plain[c.Token], c.ID)
		} else {
			rest = append(rest, c)
		}
	}
	var lost []int64
	err := d.InTx(ctx, nil, func(tx *sql.Tx) error {
		lost = lost[:0]
		for token, ids := range plain {
			l, err := d.completePlain(ctx, tx, token, ids)
			if err != nil {
				return err
			}
			lost = append(lost, l...)
		}
		l, err := d.CompleteEachTx(ctx, tx, rest)
		if err != nil {
			return err
		}
		lost = append(lost, l...)
		// In the outcomes' transaction: a log commits with its outcome.
		return d.PutLogsTx(ctx, tx, cs, lost)
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs: %w", len(cs), err)
	}
	return lost, nil
}

// completePlain marks ids held with token as succeeded and returns those
// whose lease was lost.
func (d *Driver) completePlain(ctx context.Context, tx *sql.Tx, token string, ids []int64) ([]int64, error) {
	args := make([]any, 0, len(ids)+1)
	args = append(args, token)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, d.InList(d.q.CompleteSuccess, 2, len(ids)), args...)
	if err != nil {
		return nil, err
	}
	done, err := sqldriver.IDSet(rows, len(ids))
	if err != nil {
		return nil, err
	}
	return sqldriver.Missing(ids, done), nil
}
