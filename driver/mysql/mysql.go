// Package mysql is the sluice driver for MySQL 8 and MariaDB 10.6 and later,
// with a fallback claim for older servers that lack SKIP LOCKED.
//
// Connections interpolate bind parameters on the client (interpolateParams):
// without it, go-sql-driver prepares, executes and closes a server-side
// statement for every query with arguments, which is three round trips
// instead of one. Every value sluice binds is a number, a string, a time or
// NULL, which the driver escapes for the connection's character set.
package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	stddriver "database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

//go:embed migrations/*.sql queries/*.sql
var files embed.FS

// queries is MySQL's catalogue: the statements of every dialect and
// those only MySQL runs, in queries/*.sql under their field names.
type queries struct {
	sqldriver.Queries
	// claim.sql: the skip-locked claim locks rows, then updates them.
	ClaimPartitioned, ClaimUpdate string
	// jobs.sql
	KeyHolders, KeyHolderLocked string
	// import.sql: `sluice import`'s copy from another job table (Import).
	ImportColumns, ImportMaxValue, ImportLedgerCreate, ImportLedgerHas, ImportKeyHolder, ImportInsert, ImportLedgerAdd string
	// complete.sql
	CompleteMany, CompleteManyFirst, CompleteManyHistory, CompleteManyHistoryFirst string
	RescueFailedLock, RescueFailed, PurgeSpan, PurgeProbe                          string
	// leases.sql: leases by row lock, and the lock backend (package lock).
	LeaseLock, LeaseInsert, LeaseUpdate string
	LockRecord, LockFence, LockHolder   string
	// schema.sql
	MigrateLock, MigrateUnlock string
}

// maxConns is the pool's size unless the URL's pool_max_conns
// (sqldriver.PoolParam) says otherwise. Claimers, completers, heartbeats
// and callers' transactions share the pool; 32 keeps them from queueing in
// Go without crowding a server whose default max_connections is 151.
const maxConns = 32

// MySQL error numbers sluice reacts to.
const (
	errDupEntry        = 1062
	errNoSuchTable     = 1146
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

// Driver is the MySQL / MariaDB driver.
type Driver struct {
	sqldriver.Base
	q          *queries
	migrations []sqldriver.Migration
	// migrateLock names the server-wide GET_LOCK that serialises migrations
	// of this database and prefix.
	migrateLock string
	// skipLocked selects the SELECT ... FOR UPDATE SKIP LOCKED claim;
	// otherwise every claim takes sqldriver.ClaimFair's path, whose
	// claim-state row lock serialises the claims of a queue.
	skipLocked bool
	// consecutiveIDs is true when a multi-row INSERT gets consecutive ids
	// (innodb_autoinc_lock_mode 0 or 1); idStep is auto_increment_increment.
	consecutiveIDs bool
	idStep         int64
	server         string
	// galera is true on a Galera cluster node (wsrep_on=ON).
	galera bool
}

var _ driver.Driver = (*Driver)(nil)

// Options tune Open.
type Options struct {
	Prefix string // table prefix, default "sluice_"
	// ForceUpdateClaim uses the claim of servers without SKIP LOCKED even
	// on one with it; the URL parameter sluice_claim=update sets it too.
	ForceUpdateClaim bool
}

// ParseURL turns mysql://USER:PASS@HOST:PORT/DB?params into a connection
// config with the session settings sluice relies on: UTC times, found-rows
// counts and client-side interpolation. Parameters that go-sql-driver does
// not know are sent to the server as session variables (SET name = value).
func ParseURL(rawURL string) (*mysql.Config, error) {
	cfg, _, err := parseURL(rawURL)
	return cfg, err
}

// urlOptions are sluice's own parameters of a URL, which never reach the
// server: sluice_claim and sqldriver.PoolParam.
type urlOptions struct {
	forceUpdate bool
	pool        int
}

func parseURL(rawURL string) (*mysql.Config, urlOptions, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse quotes the whole URL, password included.
		return nil, urlOptions{}, errors.New("mysql: malformed URL; want mysql://USER:PASS@HOST:PORT/DB")
	}
	if u.Scheme != "mysql" {
		return nil, urlOptions{}, fmt.Errorf("mysql: URL scheme %q, want mysql://USER:PASS@HOST:PORT/DB", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, urlOptions{}, errors.New("mysql: URL has no host; want mysql://USER:PASS@HOST:PORT/DB")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" || strings.Contains(dbName, "/") {
		return nil, urlOptions{}, fmt.Errorf("mysql: URL for %s names no database; want mysql://USER:PASS@HOST:PORT/DB", u.Host)
	}
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	params, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, urlOptions{}, fmt.Errorf("mysql: URL parameters: %w", err)
	}
	var opts urlOptions
	if v, ok := params["sluice_claim"]; ok {
		if len(v) != 1 || v[0] != "update" {
			return nil, urlOptions{}, fmt.Errorf("mysql: sluice_claim=%s: the only value is update", strings.Join(v, ","))
		}
		opts.forceUpdate = true
		params.Del("sluice_claim")
	}
	if opts.pool, err = sqldriver.PoolSize("mysql", params, maxConns); err != nil {
		return nil, urlOptions{}, err
	}
	// ParseDSN knows go-sql-driver's own parameters (tls, timeout, charset...);
	// the credentials are set afterwards so that no character in them can
	// confuse its parser.
	dsn := "tcp(" + net.JoinHostPort(u.Hostname(), port) + ")/" + dbName
	if len(params) > 0 {
		dsn += "?" + params.Encode()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, urlOptions{}, fmt.Errorf("mysql: URL parameters: %w", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	// Fenced updates report lost leases by counting rows; a row matched
	// but left unchanged must still count.
	cfg.ClientFoundRows = true
	if !params.Has("maxAllowedPacket") {
		// 0 reads the server's limit, so that an oversized statement falls
		// back to a prepared one instead of being cut off by the server.
		cfg.MaxAllowedPacket = 0
	}
	if !params.Has("timeout") {
		cfg.Timeout = 10 * time.Second
	}
	// DATETIME(6) stores what it is given, so bound times are truncated to
	// the microsecond like Go's Truncate rather than rounded by the server.
	if err := cfg.Apply(mysql.TimeTruncate(time.Microsecond)); err != nil {
		return nil, urlOptions{}, fmt.Errorf("mysql: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// CURRENT_TIMESTAMP, NOW() and the column defaults an application's own
	// INSERTs use then agree with UTC_TIMESTAMP.
	cfg.Params["time_zone"] = "'+00:00'"
	if _, ok := cfg.Params["sql_mode"]; !ok {
		// Strict mode makes an over-long queue or type fail as it does on
		// the other databases instead of being silently cut.
		cfg.Params["sql_mode"] = "CONCAT_WS(',', NULLIF(@@sql_mode, ''), 'STRICT_ALL_TABLES')"
	}
	return cfg, opts, nil
}

// Open connects to the database at url, checks the server and loads the
// queries. It does not migrate.
func Open(rawURL string, opts Options) (*Driver, error) {
	q := new(queries)
	prefix, migs, err := sqldriver.LoadFiles(q, files, opts.Prefix)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	cfg, urlOpts, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	migs[namedChecksVersion-1].Prepare = dropServerNamedChecks(prefix, "jobs", "schema")
	migs[purgeByIDVersion-1].Prepare = dropIndexIfExists(prefix+"jobs", prefix+"jobs_finished")
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(urlOpts.pool)
	db.SetMaxIdleConns(urlOpts.pool)
	db.SetConnMaxIdleTime(5 * time.Minute)
	// Proxies and failovers drop old connections; recycling them keeps a
	// dead one from failing a claim.
	db.SetConnMaxLifetime(30 * time.Minute)

	d := &Driver{
		Base: sqldriver.Base{
			Dialect: sqldriver.Dialect{
				Placeholder:     func(int) string { return "?" },
				Duration:        func(d time.Duration) any { return sqldriver.Micros(d) },
				Time:            func(t time.Time) any { return t.UTC() },
				Transient:       isTransient,
				UniqueViolation: isUnique,
			},
			Read: db, Write: db, Q: &q.Queries,
		},
		q:           q,
		migrations:  migs,
		migrateLock: migrateLockName(cfg.DBName, prefix),
	}
	d.PurgeBound = d.purgeBound
	d.ClaimPicked = d.claimIDs
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout+5*time.Second)
	defer cancel()
	if err := d.probe(ctx, urlOpts.forceUpdate || opts.ForceUpdateClaim); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: connect to %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return d, nil
}

// probe checks the connection and reads what the claim and insert paths
// depend on.
func (d *Driver) probe(ctx context.Context, forceUpdate bool) error {
	if err := d.Write.PingContext(ctx); err != nil {
		return err
	}
	var lockMode, step int64
	err := d.Write.QueryRowContext(ctx, "SELECT VERSION(), @@innodb_autoinc_lock_mode, @@auto_increment_increment").
		Scan(&d.server, &lockMode, &step)
	if err != nil {
		return fmt.Errorf("read server version: %w", err)
	}
	d.skipLocked = !forceUpdate && supportsSkipLocked(d.server)
	d.consecutiveIDs = lockMode < 2
	d.idStep = max(step, 1)
	// MySQL has no wsrep_on (no row); MariaDB has it, ON on a cluster node.
	var name, on string
	err = d.Write.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").Scan(&name, &on)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read wsrep_on: %w", err)
	}
	d.galera = strings.EqualFold(on, "ON")
	return nil
}

// supportsSkipLocked reports whether a VERSION() string names a server with
// FOR UPDATE SKIP LOCKED: MariaDB 10.6 or MySQL 8.0.1 and later. TiDB
// reports a MySQL version but does not skip locked rows.
func supportsSkipLocked(version string) bool {
	if strings.Contains(version, "TiDB") {
		return false
	}
	num, _, _ := strings.Cut(version, "-")
	parts := strings.SplitN(num, ".", 3)
	v := [3]int{}
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		v[i] = n
	}
	if strings.Contains(version, "MariaDB") {
		return v[0] > 10 || v[0] == 10 && v[1] >= 6
	}
	return v[0] > 8 || v[0] == 8 && (v[1] > 0 || v[2] >= 1)
}

// namedChecksVersion is the migration that names the CHECK constraints of
// the first version (013_type_settings.sql).
const namedChecksVersion = 13

// dropServerNamedChecks returns the Prepare step that drops the CHECK
// constraints the server named on the prefixed tables, so that the
// migration can add them again under their columns' names. The names
// differ between MySQL and MariaDB, hence the lookup.
func dropServerNamedChecks(prefix string, tables ...string) func(context.Context, driver.Querier) ([]string, error) {
	return func(ctx context.Context, q driver.Querier) ([]string, error) {
		var stmts []string
		for _, table := range tables {
			name := prefix + table
			// The names a server gives an unnamed CHECK: CONSTRAINT_1 on
			// MariaDB, <table>_chk_1 on MySQL. The JSON checks MariaDB adds
			// to a JSON column are named after the column, and stay.
			serverNamed := regexp.MustCompile(`^(CONSTRAINT|` + regexp.QuoteMeta(name) + `_chk)_[0-9]+$`)
			var drops []string
			err := sqldriver.QueryEach(ctx, q, "list the CHECK constraints of "+name, `SELECT constraint_name FROM information_schema.table_constraints
				WHERE constraint_schema = DATABASE() AND table_name = ? AND constraint_type = 'CHECK'
				ORDER BY constraint_name`, []any{name}, func(rows *sql.Rows) error {
				var c string
				err := rows.Scan(&c)
				if err == nil && serverNamed.MatchString(c) {
					drops = append(drops, "DROP CONSTRAINT `"+c+"`")
				}
				return err
			})
			if err != nil {
				return nil, err
			}
			if len(drops) > 0 {
				stmts = append(stmts, "ALTER TABLE `"+name+"` "+strings.Join(drops, ", "))
			}
		}
		return stmts, nil
	}
}

// purgeByIDVersion is the migration that drops the finished index
// (005_purge_by_id.sql).
const purgeByIDVersion = 5

// dropIndexIfExists returns the Prepare step that drops index of table if
// the table has it. MariaDB's DROP INDEX IF EXISTS would say it in SQL,
// but MySQL 8 refuses that syntax; and as DDL commits on its own, a
// migration interrupted after the drop, before its version was recorded,
// runs again and must find nothing to do.
func dropIndexIfExists(table, index string) func(context.Context, driver.Querier) ([]string, error) {
	return func(ctx context.Context, q driver.Querier) ([]string, error) {
		var n int
		err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.statistics
			WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, table, index).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("look up index %s of %s: %w", index, table, err)
		}
		if n == 0 {
			return nil, nil
		}
		return []string{"DROP INDEX `" + index + "` ON `" + table + "`"}, nil
	}
}

// migrateLockName keeps the lock name within GET_LOCK's 64 characters.
func migrateLockName(dbName, prefix string) string {
	name := dbName + "." + prefix + "migrate"
	if len(name) <= 64 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "sluice-migrate-" + hex.EncodeToString(sum[:20])
}

func errNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func isTransient(err error) bool {
	n := errNumber(err)
	return n == errDeadlock || n == errLockWaitTimeout
}

func isUnique(err error) bool { return errNumber(err) == errDupEntry }

// Name is "mysql".
func (d *Driver) Name() string { return "mysql" }

// Statements lists the catalogue's statements with their files, so that
// the conformance suite (driver/drivertest) prepares every one against
// the database.
func (d *Driver) Statements() ([]sqldriver.Statement, error) {
	return sqldriver.Statements(d.q, files, "driver/mysql")
}

// Dialect is MySQL's spelling: backquoted names, and no row comparisons,
// which MariaDB does not turn into an index range.
func (d *Driver) Dialect() driver.Dialect {
	return driver.Dialect{Name: "mysql", Placeholder: d.Placeholder, QuoteIdent: quoteIdent, SkipDuplicates: skipDuplicates}
}

// skipDuplicates sets a column to itself on a duplicate key, which changes
// nothing; INSERT IGNORE would also turn conversion errors into warnings
// and store truncated values.
func skipDuplicates(col string) string {
	return " ON DUPLICATE KEY UPDATE " + quoteIdent(col) + " = " + quoteIdent(col)
}

func quoteIdent(ident string) string { return "`" + strings.ReplaceAll(ident, "`", "``") + "`" }

// Close closes the pool.
func (d *Driver) Close() error { return d.Write.Close() }

// SkipLocked reports whether claims use FOR UPDATE SKIP LOCKED (true) or
// the fallback through sqldriver.ClaimFair.
func (d *Driver) SkipLocked() bool { return d.skipLocked }

// Galera reports whether the server is a node of a Galera cluster
// (wsrep_on=ON). Row locks and named locks (GET_LOCK) there are local to
// the node: writes from other nodes are checked only at commit
// (certification), so anything that relies on a lock to exclude another
// session must not trust it across nodes.
func (d *Driver) Galera() bool { return d.galera }

// ServerVersion is the server's VERSION().
func (d *Driver) ServerVersion() string { return d.server }

// SchemaVersion reports the current and the newest known schema version.
func (d *Driver) SchemaVersion(ctx context.Context) (int, int, error) {
	return d.Base.SchemaVersion(ctx, len(d.migrations), func(err error) bool {
		return errNumber(err) == errNoSuchTable
	})
}

// Migrate applies pending migrations while holding a named lock. MySQL DDL
// commits implicitly, so a transaction cannot keep two migrating processes
// apart; GET_LOCK belongs to a session, hence the dedicated connection.
// On Galera the lock holds on one node only: concurrent migrations through
// different nodes can then collide on a step that cannot run twice (an
// index), and one of them fails; a re-run finds the schema complete.
func (d *Driver) Migrate(ctx context.Context) (driver.MigrateResult, error) {
	conn, err := d.Write.Conn(ctx)
	if err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, d.q.MigrateLock, d.migrateLock).Scan(&got); err != nil {
		return driver.MigrateResult{}, fmt.Errorf("migrate: take lock %s: %w", d.migrateLock, err)
	}
	if got.Int64 != 1 {
		return driver.MigrateResult{}, fmt.Errorf("migrate: lock %s still held by another process after 60s", d.migrateLock)
	}
	defer func() {
		var released sql.NullInt64
		err := conn.QueryRowContext(context.WithoutCancel(ctx), d.q.MigrateUnlock, d.migrateLock).Scan(&released)
		if err != nil || released.Int64 != 1 {
			// Ending the session is the other way to free a named lock.
			conn.Raw(func(any) error { return stddriver.ErrBadConn })
		}
	}()
	cur := 0
	err = conn.QueryRowContext(ctx, d.q.SchemaVersion).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && errNumber(err) != errNoSuchTable {
		return driver.MigrateResult{}, fmt.Errorf("migrate: read version: %w", err)
	}
	v, err := sqldriver.ApplyMigrations(ctx, conn, d.migrations, cur, d.q.SchemaSet)
	if err != nil && d.galera {
		// GET_LOCK holds on one Galera node only, so a migration running on
		// another node at the same time may have applied a step first (its
		// index then exists here). If that migration has finished, the
		// schema is complete and there is nothing to report.
		var now int
		if d.Write.QueryRowContext(ctx, d.q.SchemaVersion).Scan(&now) == nil && now >= len(d.migrations) {
			return driver.MigrateResult{From: now, To: now}, nil
		}
	}
	return driver.MigrateResult{From: cur, To: v}, err
}

// AcquireLease takes or renews a named lease. The row is locked while the
// decision is made; times come from the database clock read under that lock.
func (d *Driver) AcquireLease(ctx context.Context, p driver.LeaseParams) (sluicetype.LeaseState, error) {
	var l sluicetype.LeaseState
	// Two first acquisitions of a name race to insert its row; the loser's
	// duplicate key (or deadlock on the gap lock) is retried and then sees
	// the winner's row.
	retryable := func(err error) bool { return isTransient(err) || isUnique(err) }
	err := sqldriver.RetryTransient(ctx, retryable, func() error {
		var err error
		l, err = d.acquireLease(ctx, p)
		return err
	})
	if err != nil {
		return l, fmt.Errorf("acquire lease %s: %w", p.Name, err)
	}
	return l, nil
}

func (d *Driver) acquireLease(ctx context.Context, p driver.LeaseParams) (sluicetype.LeaseState, error) {
	var l sluicetype.LeaseState
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return l, err
	}
	defer tx.Rollback()
	var since, until, now sqldriver.Time
	err = tx.QueryRowContext(ctx, d.q.LeaseLock, p.Name).Scan(&l.Holder, &l.Fence, &since, &until, &now)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if now, err = d.txNow(ctx, tx); err != nil {
			return l, err
		}
		l = sluicetype.LeaseState{Held: true, Holder: p.Holder, Fence: 1, Since: now.Time, Until: leaseEnd(now.Time, p.TTL)}
		if _, err := tx.ExecContext(ctx, d.q.LeaseInsert, p.Name, p.Holder, l.Since, l.Until); err != nil {
			return l, err
		}
		return l, tx.Commit()
	case err != nil:
		return l, err
	case l.Holder == p.Holder:
		l.Held, l.Since, l.Until = true, since.Time, leaseEnd(now.Time, p.TTL)
	case until.Time.Before(now.Time):
		l = sluicetype.LeaseState{Held: true, Holder: p.Holder, Fence: l.Fence + 1, Since: now.Time, Until: leaseEnd(now.Time, p.TTL)}
	default:
		l.Since, l.Until = since.Time, until.Time
		return l, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, d.q.LeaseUpdate, l.Holder, l.Fence, l.Since, l.Until, p.Name); err != nil {
		return l, err
	}
	return l, tx.Commit()
}

func leaseEnd(now time.Time, ttl time.Duration) time.Time {
	return now.Add(ttl).Truncate(time.Microsecond)
}

func (d *Driver) txNow(ctx context.Context, tx *sql.Tx) (sqldriver.Time, error) {
	var now sqldriver.Time
	err := tx.QueryRowContext(ctx, d.q.Now).Scan(&now)
	return now, err
}
