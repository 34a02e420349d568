// Command ceiling measures the SQL ceiling of a job queue on one database:
// the jobs per second that the minimal statements a queue needs per job
// reach, with no queue code around them (issue 39). It imports only the
// database drivers and the standard library, so that what it measures is
// the database and its client, not sluice.
//
// For each setting (batch B × clients N) it creates a fresh minimal table
// (id, status, owner, payload and an index fit for the claim), loads its
// pending rows, and runs N clients for the duration, each looping over
// two statements:
//
//   - claim B pending rows, skipping those other clients hold: PostgreSQL
//     UPDATE ... WHERE id = ANY(ARRAY(SELECT ... LIMIT B FOR UPDATE SKIP
//     LOCKED)) RETURNING id; MariaDB/MySQL (no UPDATE ... RETURNING) SELECT ... FOR
//     UPDATE SKIP LOCKED then UPDATE by id, in one READ COMMITTED
//     transaction; SQLite (one writer) UPDATE ... RETURNING with a LIMIT
//     subquery;
//   - complete them: UPDATE ... SET status = done WHERE id IN (...) AND
//     owner = the claim's owner.
//
// Jobs/s is the completed rows over the time from the clients' start to
// the last one's stop. Durability is the server's own (PostgreSQL, MySQL)
// or sluice's (SQLite: WAL, synchronous=NORMAL, as driver/sqlite sets).
//
// Usage:
//
//	ceiling -db postgres://postgres@127.0.0.1:5432/sluice_bench -batch 100,500,1000 -clients 1,2,4,8 -duration 15s -json
//
// The database URL has sluice's forms: postgres://USER:PASS@HOST:PORT/DB,
// mysql://USER:PASS@HOST:PORT/DB or sqlite:PATH. Results go to stdout (one
// line per setting, then the best), progress to stderr.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}

// config is one invocation's settings.
type config struct {
	URL      string
	Table    string
	Batches  []int
	Clients  []int
	Rows     int // 0: sized from the duration and the rate measured so far
	Duration time.Duration
	JSON     bool
	// Keep leaves the last setting's table in place (tests read it).
	Keep bool
	// OnClaim, when set, receives every claim's ids (tests check that no
	// row is claimed twice). It is called from the clients' goroutines.
	OnClaim func(ids []int64)
}

// result is one setting's figures, one JSON line.
type result struct {
	DB        string  `json:"db"` // postgres, mysql or sqlite
	Server    string  `json:"server"`
	Batch     int     `json:"batch"`
	Clients   int     `json:"clients"`
	Rows      int     `json:"rows"`
	Seconds   float64 `json:"seconds"`
	Claimed   int64   `json:"claimed"`
	Completed int64   `json:"completed"`
	JobsPerS  float64 `json:"jobs_per_s"`
	// RanDry: a claim found no pending row before the duration was up,
	// so the figure is a lower bound of the setting's rate.
	RanDry  bool `json:"ran_dry"`
	Retries int  `json:"retries,omitempty"` // claims retried after a deadlock or lock wait timeout
	Best    bool `json:"best,omitempty"`    // the final line: the best setting
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var batches, clients string
	fs.StringVar(&cfg.URL, "db", "", "database URL: postgres://..., mysql://... or sqlite:PATH (required)")
	fs.StringVar(&cfg.Table, "table", "sluice_ceiling", "the table's name; it is dropped and recreated for each setting")
	fs.StringVar(&batches, "batch", "100,500,1000", "rows claimed per statement, comma-separated")
	fs.StringVar(&clients, "clients", "1,2,4,8", "concurrent clients, comma-separated")
	fs.IntVar(&cfg.Rows, "rows", 0, "pending rows loaded per setting; 0 sizes them from the duration and the best rate so far, and repeats a setting that ran dry")
	fs.DurationVar(&cfg.Duration, "duration", 15*time.Second, "how long each setting runs")
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON lines instead of text")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the last setting's table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.URL == "" {
		return errors.New("-db is required")
	}
	var err error
	if cfg.Batches, err = intList("batch", batches); err != nil {
		return err
	}
	if cfg.Clients, err = intList("clients", clients); err != nil {
		return err
	}
	if cfg.Rows < 0 || cfg.Duration <= 0 {
		return errors.New("-rows must be ≥ 0 and -duration > 0")
	}
	return ceiling(ctx, cfg, stdout, slog.New(slog.NewTextHandler(stderr, nil)))
}

func intList(name, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-%s: %q is not a positive number", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// tableName keeps the table name safe to splice into statements.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,50}$`)

// ceiling runs every setting and prints its results, then the best.
func ceiling(ctx context.Context, cfg config, stdout io.Writer, log *slog.Logger) error {
	if !tableName.MatchString(cfg.Table) {
		return fmt.Errorf("-table %q: letters, digits and _ only", cfg.Table)
	}
	d, err := open(cfg.URL, cfg.Table)
	if err != nil {
		return err
	}
	defer d.db.Close()
	maxClients := 0
	for _, n := range cfg.Clients {
		maxClients = max(maxClients, n)
	}
	if d.name != "sqlite" {
		d.db.SetMaxOpenConns(maxClients + 1)
		d.db.SetMaxIdleConns(maxClients + 1)
	}
	if err := d.db.QueryRowContext(ctx, d.versionQuery).Scan(&d.server); err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	log.Info("ceiling", "db", d.name, "server", d.server, "batches", cfg.Batches, "clients", cfg.Clients, "duration", cfg.Duration)

	var best result
	rate := d.guess // jobs/s that auto-sized rows assume
	for i, b := range cfg.Batches {
		for j, n := range cfg.Clients {
			last := i == len(cfg.Batches)-1 && j == len(cfg.Clients)-1
			rows := cfg.Rows
			var r result
			for try := 1; ; try++ {
				if cfg.Rows == 0 {
					// Half as much again as the best rate so far would
					// claim, so that the table does not run dry; four
					// times that again after each time it did.
					rows = max(10_000, int(1.5*rate*cfg.Duration.Seconds())) * (1 << (2 * (try - 1)))
				}
				r, err = d.setting(ctx, cfg, b, n, rows, log)
				if err != nil {
					d.drop(context.WithoutCancel(ctx))
					return fmt.Errorf("%s batch %d clients %d: %w", d.name, b, n, err)
				}
				if !(cfg.Keep && last) {
					if err := d.drop(ctx); err != nil {
						return err
					}
				}
				rate = max(rate, r.JobsPerS)
				if !r.RanDry || cfg.Rows != 0 || try == 3 {
					break
				}
				log.Warn("the table ran dry: again with more rows", "batch", b, "clients", n, "rows", rows, "jobs_per_s", int(r.JobsPerS))
			}
			if err := emit(stdout, cfg.JSON, r); err != nil {
				return err
			}
			if r.JobsPerS > best.JobsPerS {
				best = r
			}
		}
	}
	best.Best = true
	return emit(stdout, cfg.JSON, best)
}

func emit(w io.Writer, asJSON bool, r result) error {
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	what := "setting"
	if r.Best {
		what = "best"
	}
	dry := ""
	if r.RanDry {
		dry = " (ran dry: a lower bound)"
	}
	_, err := fmt.Fprintf(w, "%s %-7s %s batch %5d clients %3d: %9.0f jobs/s (%d of %d rows in %.1f s)%s\n",
		r.DB, what, r.Server, r.Batch, r.Clients, r.JobsPerS, r.Completed, r.Rows, r.Seconds, dry)
	return err
}

// dialect holds one database's statements; %[1]s is the table's name.
type dialect struct {
	name, server string
	db           *sql.DB
	table        string
	versionQuery string
	create       []string // run before the load
	index        []string // run after the load
	guess        float64  // jobs/s that first sizes auto rows
	// load inserts the pending rows 1 .. rows.
	load func(ctx context.Context, db *sql.DB, table string, rows int) error
	// claim claims up to batch pending rows for owner and returns their ids.
	claim func(ctx context.Context, db *sql.DB, table string, owner int64, batch int) ([]int64, error)
	// complete marks ids done where owner still holds them.
	complete func(ctx context.Context, db *sql.DB, table string, owner int64, ids []int64) (int64, error)
}

const (
	pending = 0
	running = 1
	done    = 2
)

// open connects to url's database as sluice's URL forms say.
func open(rawURL, table string) (*dialect, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		db, err := sql.Open("pgx", rawURL)
		if err != nil {
			return nil, err
		}
		return postgres(db, table), nil
	case strings.HasPrefix(rawURL, "mysql://"):
		cfg, err := mysqlConfig(rawURL)
		if err != nil {
			return nil, err
		}
		conn, err := gomysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return mysql(sql.OpenDB(conn), table), nil
	case strings.HasPrefix(rawURL, "sqlite:"):
		db, err := openSQLite(strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "//"))
		if err != nil {
			return nil, err
		}
		return sqlite(db, table), nil
	}
	return nil, fmt.Errorf("database URL %q: use postgres://USER:PASS@HOST:PORT/DB, mysql://USER:PASS@HOST:PORT/DB or sqlite:PATH", redact(rawURL))
}

// redact hides a URL's password.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxx")
			return u.String()
		}
	}
	return raw
}

// mysqlConfig reads mysql://USER:PASS@HOST:PORT/DB?PARAMS as sluice's
// MySQL driver does (driver/mysql parseURL).
func mysqlConfig(raw string) (*gomysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("mysql: malformed URL; want mysql://USER:PASS@HOST:PORT/DB")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if u.Hostname() == "" || dbName == "" || strings.Contains(dbName, "/") {
		return nil, errors.New("mysql: want mysql://USER:PASS@HOST:PORT/DB")
	}
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	dsn := "tcp(" + net.JoinHostPort(u.Hostname(), port) + ")/" + dbName
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql: URL parameters: %w", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.InterpolateParams = true
	return cfg, nil
}

// openSQLite opens path with sluice's pragmas (driver/sqlite): WAL,
// synchronous=NORMAL, a busy timeout, and one writer connection whose
// transactions take the write lock at once.
func openSQLite(path string) (*sql.DB, error) {
	file, extra, _ := strings.Cut(path, "?")
	if file == "" || file == ":memory:" {
		return nil, errors.New("sqlite: give a file on disk: sqlite:PATH")
	}
	params := url.Values{}
	params.Add("_pragma", "busy_timeout(10000)")
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Set("_txlock", "immediate")
	more, err := url.ParseQuery(extra)
	if err != nil {
		return nil, fmt.Errorf("sqlite: parameters: %w", err)
	}
	for k, vs := range more {
		for _, v := range vs {
			params.Add(k, v)
		}
	}
	db, err := sql.Open("sqlite", "file:"+file+"?"+params.Encode())
	if err != nil {
		return nil, err
	}
	// SQLite has one writer: the clients take turns on one connection,
	// as sluice's writer pool does.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// ids renders ids as a literal list for IN (...): they are integers.
func idList(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

func queryIDs(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// loadChunks inserts rows in multi-row INSERTs of chunk rows each.
func loadChunks(ctx context.Context, db *sql.DB, table string, rows, chunk int) error {
	var b strings.Builder
	for from := 0; from < rows; from += chunk {
		b.Reset()
		fmt.Fprintf(&b, "INSERT INTO %s (id, status, owner, payload) VALUES ", table)
		for id := from + 1; id <= min(from+chunk, rows); id++ {
			if id > from+1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,0,'{}')", id, pending)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func postgres(db *sql.DB, table string) *dialect {
	return &dialect{
		name: "postgres", db: db, table: table, guess: 100_000,
		versionQuery: "SELECT 'PostgreSQL ' || split_part(current_setting('server_version'), ' ', 1)",
		create: []string{
			`CREATE TABLE %[1]s (id bigint PRIMARY KEY, status smallint NOT NULL, owner bigint NOT NULL DEFAULT 0, payload text NOT NULL)`,
		},
		index: []string{
			// The pending rows in claim order, and nothing else.
			`CREATE INDEX %[1]s_pending ON %[1]s (id) WHERE status = 0`,
			`ANALYZE %[1]s`,
		},
		load: func(ctx context.Context, db *sql.DB, table string, rows int) error {
			_, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (id, status, owner, payload)
				SELECT g, %d, 0, '{}' FROM generate_series(1, $1::bigint) g`, table, pending), rows)
			return err
		},
		claim: func(ctx context.Context, db *sql.DB, table string, owner int64, batch int) ([]int64, error) {
			// = ANY(ARRAY(...)), not IN (...): on a large table the
			// planner joins an IN subquery by hashing and a scan of the
			// whole table, where the array is probed by primary key.
			return queryIDs(ctx, db, fmt.Sprintf(`UPDATE %[1]s SET status = %[2]d, owner = $1
				WHERE id = ANY(ARRAY(SELECT id FROM %[1]s WHERE status = %[3]d ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))
				RETURNING id`, table, running, pending), owner, batch)
		},
		complete: func(ctx context.Context, db *sql.DB, table string, owner int64, ids []int64) (int64, error) {
			return affected(db.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET status = %d WHERE id = ANY($1) AND owner = $2`,
				table, done), ids, owner))
		},
	}
}

// mysqlClaimTx is sluice's claim isolation on MySQL: READ COMMITTED takes
// no gap locks.
var mysqlClaimTx = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

func mysql(db *sql.DB, table string) *dialect {
	return &dialect{
		name: "mysql", db: db, table: table, guess: 30_000,
		versionQuery: "SELECT CONCAT(IF(VERSION() LIKE '%MariaDB%', 'MariaDB ', 'MySQL '), SUBSTRING_INDEX(VERSION(), '-', 1))",
		create: []string{
			`CREATE TABLE %[1]s (id BIGINT NOT NULL PRIMARY KEY, status TINYINT NOT NULL, owner BIGINT NOT NULL DEFAULT 0,
				payload VARCHAR(255) NOT NULL, KEY %[1]s_pending (status, id)) ENGINE=InnoDB`,
		},
		index: []string{`ANALYZE TABLE %[1]s`},
		load: func(ctx context.Context, db *sql.DB, table string, rows int) error {
			return loadChunks(ctx, db, table, rows, 10_000)
		},
		// MariaDB has no UPDATE ... RETURNING (and MySQL no RETURNING at
		// all), and SKIP LOCKED only in a SELECT: lock, then update by id.
		claim: func(ctx context.Context, db *sql.DB, table string, owner int64, batch int) ([]int64, error) {
			tx, err := db.BeginTx(ctx, mysqlClaimTx)
			if err != nil {
				return nil, err
			}
			defer tx.Rollback()
			ids, err := queryIDs(ctx, tx, fmt.Sprintf(`SELECT id FROM %s WHERE status = %d ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED`,
				table, pending, batch))
			if err != nil || len(ids) == 0 {
				return nil, err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET status = %d, owner = %d WHERE id IN (%s)`,
				table, running, owner, idList(ids))); err != nil {
				return nil, err
			}
			return ids, tx.Commit()
		},
		complete: func(ctx context.Context, db *sql.DB, table string, owner int64, ids []int64) (int64, error) {
			return affected(db.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET status = %d WHERE id IN (%s) AND owner = %d`,
				table, done, idList(ids), owner)))
		},
	}
}

func sqlite(db *sql.DB, table string) *dialect {
	return &dialect{
		name: "sqlite", db: db, table: table, guess: 300_000,
		versionQuery: "SELECT 'SQLite ' || sqlite_version()",
		create: []string{
			`CREATE TABLE %[1]s (id INTEGER PRIMARY KEY, status INTEGER NOT NULL, owner INTEGER NOT NULL DEFAULT 0, payload TEXT NOT NULL)`,
		},
		index: []string{
			`CREATE INDEX %[1]s_pending ON %[1]s (id) WHERE status = 0`,
			`ANALYZE %[1]s`,
		},
		load: func(ctx context.Context, db *sql.DB, table string, rows int) error {
			_, err := db.ExecContext(ctx, fmt.Sprintf(`WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?1)
				INSERT INTO %s (id, status, owner, payload) SELECT n, %d, 0, '{}' FROM s`, table, pending), rows)
			return err
		},
		// One writer: no row locks to skip; one statement claims.
		claim: func(ctx context.Context, db *sql.DB, table string, owner int64, batch int) ([]int64, error) {
			return queryIDs(ctx, db, fmt.Sprintf(`UPDATE %[1]s SET status = %[2]d, owner = ?1
				WHERE id IN (SELECT id FROM %[1]s WHERE status = %[3]d ORDER BY id LIMIT ?2)
				RETURNING id`, table, running, pending), owner, batch)
		},
		complete: func(ctx context.Context, db *sql.DB, table string, owner int64, ids []int64) (int64, error) {
			return affected(db.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET status = %d WHERE id IN (%s) AND owner = ?1`,
				table, done, idList(ids)), owner))
		},
	}
}

func (d *dialect) exec(ctx context.Context, stmts []string) error {
	for _, s := range stmts {
		if _, err := d.db.ExecContext(ctx, fmt.Sprintf(s, d.table)); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(strings.Fields(fmt.Sprintf(s, d.table)), " "), err)
		}
	}
	return nil
}

func (d *dialect) drop(ctx context.Context) error {
	return d.exec(ctx, []string{"DROP TABLE IF EXISTS %[1]s"})
}

// retryable reports a MySQL deadlock (1213) or lock wait timeout (1205),
// which a queue's claim retries.
func retryable(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// setting measures one batch size and client count on a fresh table.
func (d *dialect) setting(ctx context.Context, cfg config, batch, clients, rows int, log *slog.Logger) (result, error) {
	r := result{DB: d.name, Server: d.server, Batch: batch, Clients: clients, Rows: rows}
	if err := d.drop(ctx); err != nil {
		return r, err
	}
	if err := d.exec(ctx, d.create); err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := d.load(ctx, d.db, d.table, rows); err != nil {
		return r, fmt.Errorf("load: %w", err)
	}
	if err := d.exec(ctx, d.index); err != nil {
		return r, err
	}
	log.Info("loaded", "db", d.name, "rows", rows, "seconds", time.Since(t0).Seconds(), "batch", batch, "clients", clients)

	var claimed, completed atomic.Int64
	var retries atomic.Int64
	var dry atomic.Bool
	var owners atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) && !dry.Load() && ctx.Err() == nil {
				owner := owners.Add(1)
				ids, err := d.claim(ctx, d.db, d.table, owner, batch)
				if retryable(err) {
					retries.Add(1)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				if len(ids) == 0 {
					dry.Store(true)
					return
				}
				claimed.Add(int64(len(ids)))
				if cfg.OnClaim != nil {
					cfg.OnClaim(ids)
				}
				var n int64
				for {
					n, err = d.complete(ctx, d.db, d.table, owner, ids)
					if !retryable(err) {
						break
					}
					retries.Add(1)
				}
				if err != nil {
					errs <- fmt.Errorf("complete: %w", err)
					return
				}
				completed.Add(n)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return r, err
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.Seconds = elapsed.Seconds()
	r.Claimed, r.Completed = claimed.Load(), completed.Load()
	r.JobsPerS = float64(r.Completed) / r.Seconds
	r.RanDry = dry.Load()
	r.Retries = int(retries.Load())
	log.Info("measured", "db", d.name, "batch", batch, "clients", clients, "jobs_per_s", int(r.JobsPerS), "ran_dry", r.RanDry)
	return r, nil
}
