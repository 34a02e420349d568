package readmetest

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// readmeDB is the database the docs' SQL blocks run in on MariaDB and
// PostgreSQL: the blocks name the real table, sluice_jobs, so they get a
// database of their own, migrated by the real binary. Every case runs in a
// transaction that is rolled back. SLUICE_TEST_README_DB names another one
// (.ci/run sets it with the other SLUICE_TEST_* variables), so that two
// checkouts' runs on one machine each migrate a schema of their own.
var readmeDB = cmp.Or(os.Getenv("SLUICE_TEST_README_DB"), "sluice_readme")

// The key the docs' statements enqueue; the cases put holders of it in
// place first.
const readmeKey = "'order:1001'"

// sqlTarget is an application's own connection to a migrated database:
// plain database/sql with the server's default settings, as PHP's PDO
// would have, not sluice's driver.
type sqlTarget struct {
	name string
	db   *sql.DB
}

func openSQLTarget(t *testing.T, name string) sqlTarget {
	t.Helper()
	ctx := context.Background()
	var sluiceURL, driverName, dsn string
	switch name {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "app.db")
		sluiceURL, driverName, dsn = "sqlite:"+path, "sqlite", path
	case "mysql":
		admin, _ := testdb.OpenURL(t, name) // skips, or fails in CI, without a server
		_, err := admin.DB().ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+readmeDB+" CHARACTER SET utf8mb4")
		require.NoError(t, err)
		u, err := url.Parse(testdb.URL(name, ""))
		require.NoError(t, err)
		u.Path = "/" + readmeDB
		sluiceURL = u.String()
		cfg := gomysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, readmeDB
		driverName, dsn = "mysql", cfg.FormatDSN()
	case "postgres":
		admin, _ := testdb.OpenURL(t, name)
		var n int
		require.NoError(t, admin.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_database WHERE datname = $1", readmeDB).Scan(&n))
		if n == 0 {
			_, err := admin.DB().ExecContext(ctx, "CREATE DATABASE "+readmeDB)
			if err != nil && !strings.Contains(err.Error(), "already exists") { // a concurrent run made it
				require.NoError(t, err)
			}
		}
		u, err := url.Parse(testdb.URL(name, ""))
		require.NoError(t, err)
		u.Path = "/" + readmeDB
		sluiceURL, driverName, dsn = u.String(), "pgx", u.String()
	default:
		t.Fatalf("unknown database %q", name)
	}
	out, err := exec.Command(bin, "--db", sluiceURL, "migrate").CombinedOutput()
	require.NoError(t, err, "sluice migrate: %s", out)
	db, err := sql.Open(driverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return sqlTarget{name: name, db: db}
}

// splitSQL splits a block into its statements at semicolons outside
// quotes and comments, dropping pieces that hold only comments.
func splitSQL(text string) []string {
	var out []string
	var cur strings.Builder
	hasCode := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text) - i
			}
			cur.WriteString(text[i : i+end])
			i += end - 1
			continue
		case c == '\'' || c == '"':
			end := strings.IndexByte(text[i+1:], c)
			if end < 0 {
				end = len(text) - i - 1
			}
			cur.WriteString(text[i : i+end+2])
			i += end + 1
			hasCode = true
			continue
		case c == ';':
			if hasCode {
				out = append(out, strings.TrimSpace(cur.String()))
			}
			cur.Reset()
			hasCode = false
			continue
		}
		cur.WriteByte(c)
		if c != ' ' && c != '\n' && c != '\t' {
			hasCode = true
		}
	}
	if hasCode {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

// runBlock runs a block's statements in tx and returns, per statement, the
// ids it returned.
func runBlock(ctx context.Context, tx *sql.Tx, stmts []string) ([][]int64, error) {
	var all [][]int64
	for _, s := range stmts {
		rows, err := tx.QueryContext(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		all = append(all, ids)
	}
	return all, nil
}

// jobID is the one id a run of the block gives: every row any of its
// statements returned must carry it.
func jobID(t *testing.T, b Block, got [][]int64) int64 {
	t.Helper()
	var id int64
	for i, ids := range got {
		require.LessOrEqual(t, len(ids), 1, "%s statement %d returned several rows: %v", b, i+1, ids)
		for _, v := range ids {
			require.True(t, id == 0 || id == v, "%s: statements returned different ids: %v", b, got)
			id = v
		}
	}
	require.NotZero(t, id, "%s gave no job id: %v", b, got)
	return id
}

// holder inserts a job that holds (or, for a finished active-mode job,
// no longer holds) the docs' key.
func (st sqlTarget) holder(t *testing.T, tx *sql.Tx, dedupe, status string) int64 {
	t.Helper()
	q := fmt.Sprintf("INSERT INTO sluice_jobs (type, business_key, dedupe, status) VALUES ('order_sync', %s, '%s', '%s')", readmeKey, dedupe, status)
	if st.name == "mysql" {
		res, err := tx.Exec(q)
		require.NoError(t, err)
		id, err := res.LastInsertId()
		require.NoError(t, err)
		return id
	}
	var id int64
	require.NoError(t, tx.QueryRow(q+" RETURNING id").Scan(&id))
	return id
}

func (st sqlTarget) keyRows(t *testing.T, tx *sql.Tx) int {
	t.Helper()
	var n int
	require.NoError(t, tx.QueryRow("SELECT COUNT(*) FROM sluice_jobs WHERE business_key = "+readmeKey).Scan(&n))
	return n
}

// The docs' plain-SQL enqueue statements, verbatim, on each database
// they are given for: they insert a job or find the one holding its key,
// under permanent and active dedupe, never abort the app's transaction,
// and refuse (rather than truncate) a bad row.
func TestDocSQLEnqueue(t *testing.T) {
	ran := map[string]bool{}
	for _, b := range allBlocks(t) {
		if b.Kind() != "sql" {
			continue
		}
		require.Contains(t, b.Text, readmeKey, "%s: the cases below hold the key %s", b, readmeKey)
		require.Contains(t, b.Text, "'order_sync'", "%s", b)
		stmts := splitSQL(b.Text)
		for _, name := range b.Args() {
			ran[name] = true
			t.Run(fmt.Sprintf("%s/%s:%d", name, b.File, b.Line), func(t *testing.T) {
				st := openSQLTarget(t, name)
				ctx := context.Background()
				inTx := func(t *testing.T, f func(tx *sql.Tx)) {
					tx, err := st.db.BeginTx(ctx, nil)
					require.NoError(t, err)
					defer tx.Rollback()
					f(tx)
				}
				run := func(t *testing.T, tx *sql.Tx) int64 {
					if name == "mysql" {
						// The app's own inserts move LAST_INSERT_ID();
						// the statements must not lean on its old value.
						_, err := tx.ExecContext(ctx, "SELECT LAST_INSERT_ID(0)")
						require.NoError(t, err)
					}
					got, err := runBlock(ctx, tx, stmts)
					require.NoError(t, err, "%s", b)
					return jobID(t, b, got)
				}

				t.Run("new key, then again", func(t *testing.T) {
					inTx(t, func(tx *sql.Tx) {
						first := run(t, tx)
						require.Equal(t, first, run(t, tx), "the second run gives the same job")
						require.Equal(t, 1, st.keyRows(t, tx), "the second run inserted nothing")
						var one int
						require.NoError(t, tx.QueryRow("SELECT 1").Scan(&one), "the transaction is still usable")
					})
				})
				t.Run("permanent key of a finished job", func(t *testing.T) {
					inTx(t, func(tx *sql.Tx) {
						h := st.holder(t, tx, "permanent", "success")
						require.Equal(t, h, run(t, tx))
						require.Equal(t, 1, st.keyRows(t, tx))
					})
				})
				t.Run("active key of a pending job", func(t *testing.T) {
					inTx(t, func(tx *sql.Tx) {
						h := st.holder(t, tx, "active", "pending")
						require.Equal(t, h, run(t, tx))
						require.Equal(t, 1, st.keyRows(t, tx))
					})
				})
				t.Run("active key of a finished job is free", func(t *testing.T) {
					inTx(t, func(tx *sql.Tx) {
						old := st.holder(t, tx, "active", "success")
						id := run(t, tx)
						require.NotEqual(t, old, id, "a finished active-mode job does not hold its key")
						require.Equal(t, id, run(t, tx))
						require.Equal(t, 2, st.keyRows(t, tx))
					})
				})
				t.Run("takes the type's settings", func(t *testing.T) {
					// As `sluice migrate --config` records them; in the
					// transaction, which is rolled back, so that other runs
					// on this database see no settings.
					inTx(t, func(tx *sql.Tx) {
						_, err := tx.ExecContext(ctx, "INSERT INTO sluice_types (type, queue, max_attempts, dedupe) VALUES ('order_sync', 'orders', 2, 'active')")
						require.NoError(t, err)
						id := run(t, tx)
						var queue, dedupe string
						var attempts int
						require.NoError(t, tx.QueryRow(fmt.Sprintf("SELECT queue, max_attempts, dedupe FROM sluice_jobs WHERE id = %d", id)).Scan(&queue, &attempts, &dedupe))
						require.Equal(t, "orders/2/active", fmt.Sprintf("%s/%d/%s", queue, attempts, dedupe))
					})
				})
				if name == "postgres" {
					t.Run("NOTIFY on commit", func(t *testing.T) { notifyOnCommit(t, st, b, stmts) })
				}
				if name == "mysql" && strings.Contains(b.Text, "lastInsertId") {
					t.Run("PDO lastInsertId", func(t *testing.T) { pdoLastInsertID(t, stmts[0]) })
				}
				t.Run("an over-long type is refused", func(t *testing.T) {
					// The same statements with a 65-character type, where
					// INSERT IGNORE would truncate it and insert the job.
					bad := make([]string, len(stmts))
					for i, s := range stmts {
						bad[i] = strings.Replace(s, "'order_sync'", "'"+strings.Repeat("t", 65)+"'", 1)
					}
					inTx(t, func(tx *sql.Tx) {
						_, err := runBlock(ctx, tx, bad)
						require.Error(t, err)
					})
					inTx(t, func(tx *sql.Tx) { require.Zero(t, st.keyRows(t, tx), "nothing was written") })
				})
			})
		}
	}
	for name := range dbNames {
		require.True(t, ran[name], "no SQL block in the docs for %s", name)
	}
}

// pdoInsert runs the docs' MySQL INSERT from PHP's PDO (exception mode)
// twice in a transaction, with another insert between, and prints
// lastInsertId() after each.
const pdoInsert = `<?php
$pdo = new PDO(getenv('PDO_DSN'), getenv('PDO_USER'), getenv('PDO_PASS'), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$pdo->beginTransaction();
$pdo->exec(getenv('ENQUEUE_SQL'));
$first = $pdo->lastInsertId();
$pdo->exec("INSERT INTO sluice_jobs (type) VALUES ('other')");
$other = $pdo->lastInsertId();
$pdo->exec(getenv('ENQUEUE_SQL'));
echo $first, " ", $other, " ", $pdo->lastInsertId(), "\n";
$pdo->rollBack();
`

// pdoLastInsertID checks the docs' word that PDO's lastInsertId() gives
// the job's id after the MySQL statement, new or existing.
func pdoLastInsertID(t *testing.T, insert string) {
	_, err := exec.LookPath("php")
	require.NoError(t, err, "php is needed for the docs' PHP examples (.ci/run installs it)")
	u, err := url.Parse(testdb.URL("mysql", ""))
	require.NoError(t, err)
	pass, _ := u.User.Password()
	script := filepath.Join(t.TempDir(), "enqueue.php")
	require.NoError(t, os.WriteFile(script, []byte(pdoInsert), 0o644))
	cmd := exec.Command("php", script)
	cmd.Env = append(os.Environ(), "PDO_DSN=mysql:host="+u.Hostname()+";port="+u.Port()+";dbname="+readmeDB,
		"PDO_USER="+u.User.Username(), "PDO_PASS="+pass, "ENQUEUE_SQL="+insert)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var first, other, again int64
	_, err = fmt.Sscan(string(out), &first, &other, &again)
	require.NoError(t, err, "%s", out)
	require.NotEqual(t, first, other)
	require.Equal(t, first, again, "lastInsertId() is the existing job's id after a duplicate")
}

// notifyOnCommit checks the docs' word that on PostgreSQL a job inserted
// by the app wakes listening workers when the app's transaction commits.
// This case commits, so it deletes its job afterwards.
func notifyOnCommit(t *testing.T, st sqlTarget, b Block, stmts []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := st.db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var listener *pgx.Conn
	require.NoError(t, conn.Raw(func(c any) error {
		listener = c.(*stdlib.Conn).Conn()
		_, err := listener.Exec(ctx, "LISTEN sluice_jobs")
		return err
	}))
	tx, err := st.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	got, err := runBlock(ctx, tx, stmts)
	if err != nil {
		tx.Rollback()
	}
	require.NoError(t, err, "%s", b)
	id := jobID(t, b, got)
	require.NoError(t, tx.Commit())
	t.Cleanup(func() { st.db.Exec("DELETE FROM sluice_jobs WHERE id = $1", id) })
	require.NoError(t, conn.Raw(func(any) error {
		n, err := listener.WaitForNotification(ctx)
		if err == nil && n.Payload != "default" {
			err = fmt.Errorf("notification for queue %q, want default", n.Payload)
		}
		return err
	}))
}
