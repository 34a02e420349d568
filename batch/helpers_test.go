package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// base is the first created_at of the test tables.
var base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a test table of orders on one database.
type fixture struct {
	d      driver.Driver
	tg     testdb.Target
	prefix string
	table  string
}

func open(t *testing.T, name string) *fixture {
	t.Helper()
	d, tg := testdb.OpenURL(t, name)
	return &fixture{d: d, tg: tg, prefix: tg.Prefix, table: tg.Prefix + "orders"}
}

// create makes the orders table: created_at repeats every 7 ids, so that
// a composite key (created_at, id) has ties on its first column.
func (f *fixture) create(t *testing.T) {
	t.Helper()
	ts := map[string]string{"sqlite": "DATETIME", "mysql": "DATETIME(6)", "postgres": "timestamptz"}[f.d.Name()]
	id := map[string]string{"sqlite": "INTEGER", "mysql": "BIGINT", "postgres": "bigint"}[f.d.Name()]
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s (id %s NOT NULL PRIMARY KEY, tenant_id INT NOT NULL, created_at %s NOT NULL,
		status VARCHAR(16) NOT NULL, hits INT NOT NULL DEFAULT 0)`, f.table, id, ts))
	f.exec(t, fmt.Sprintf("CREATE INDEX %s_created ON %s (created_at, id)", f.table, f.table))
}

// runActingAtChunk3 creates the table with 1000 rows and runs batch name
// over it in chunks of 100, calling act (batch.Pause, batch.Reset...) on
// the batch once the third chunk is done; it returns the run's error.
func (f *fixture) runActingAtChunk3(t *testing.T, name string, act func(context.Context, driver.Driver, string) (int64, error)) error {
	t.Helper()
	f.create(t)
	f.insert(t, 1, 1000)
	b := f.batch(name)
	b.ChunkSize = 100
	b.Progress = func(p batch.Progress) {
		if p.Chunks == 3 {
			_, err := act(context.Background(), f.d, name)
			require.NoError(t, err)
		}
	}
	return b.Run(context.Background(), f.d)
}

// at renders a time as the table stores it: text on SQLite.
func (f *fixture) at(tm time.Time) any {
	if f.d.Name() == "sqlite" {
		return tm.UTC().Format("2006-01-02 15:04:05")
	}
	return tm.UTC()
}

func (f *fixture) ph(n int) string {
	if f.d.Name() == "postgres" {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// insert adds rows with ids from, from+1, ... count; created_at is
// base + id/7 seconds and tenant_id is id % 3 + 1.
func (f *fixture) insert(t *testing.T, from, count int64) {
	t.Helper()
	f.insertAt(t, from, count, func(id int64) time.Time { return base.Add(time.Duration(id/7) * time.Second) })
}

func (f *fixture) insertAt(t *testing.T, from, count int64, at func(id int64) time.Time) {
	t.Helper()
	const per = 1000
	ctx := context.Background()
	tx, err := f.d.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	for start := from; start < from+count; start += per {
		n := min(per, from+count-start)
		var sb strings.Builder
		args := make([]any, 0, n*3)
		fmt.Fprintf(&sb, "INSERT INTO %s (id, tenant_id, created_at, status) VALUES ", f.table)
		for i := range n {
			id := start + i
			if i > 0 {
				sb.WriteString(", ")
			}
			k := len(args)
			fmt.Fprintf(&sb, "(%s, %s, %s, 'open')", f.ph(k+1), f.ph(k+2), f.ph(k+3))
			args = append(args, id, id%3+1, f.at(at(id)))
		}
		_, err := tx.ExecContext(ctx, sb.String(), args...)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
}

func (f *fixture) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	_, err := f.d.DB().ExecContext(context.Background(), q, args...)
	require.NoError(t, err, q)
}

func (f *fixture) count(t *testing.T, where string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.d.DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+f.table+" WHERE "+where).Scan(&n))
	return n
}

// requireOnce checks that every row was processed exactly once.
func (f *fixture) requireOnce(t *testing.T, total int64) {
	t.Helper()
	require.Equal(t, total, f.count(t, "1 = 1"))
	require.Zero(t, f.count(t, "hits <> 1"), "rows not processed exactly once")
}

// forEachDB runs fn on every database in parallel subtests.
func forEachDB(t *testing.T, fn func(t *testing.T, f *fixture)) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		fn(t, open(t, name))
	})
}
