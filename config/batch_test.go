package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/config"
)

func TestBatches(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
batches:
  close_expired:
    source: "SELECT id, created_at FROM orders WHERE status = 'open' AND tenant_id = {shard}"
    key: [created_at, id]
    shards: { values: [1, 2, 3] }
    sink: { sql: "UPDATE orders SET status = 'closed' WHERE id IN ({ids})" }
    chunk: { size: 1000 }
    throttle: { sleep: 10ms, max_rows_per_s: 500, query: "SELECT 0", threshold: 5 }
  export:
    source: "SELECT id, created_at FROM orders"
    key: [id]
    shards: { column: created_at, from: 2024-01-01, to: "2024-01-03T00:00:00Z", step: 24h }
    sink: { http: { url: "http://127.0.0.1:9000/rows", secret: s3cret, timeout: 5s } }
    chunk: { target: 500ms, min: 100, max: 10000 }
  archive:
    source: "SELECT * FROM orders WHERE created_at < '2025-01-01'"
    key: [id]
    sink:
      copy: { db: "mysql://root@archive:3306/archive", table: orders_archive }
      sql:
        - "DELETE FROM orders WHERE id BETWEEN {min:id} AND {max:id} AND created_at < '2025-01-01'"
`))
	require.NoError(t, err)
	c := f.Batches["close_expired"]
	require.Equal(t, []string{"created_at", "id"}, c.Key)
	require.Equal(t, []string{"1", "2", "3"}, c.Shards.Values)
	require.Equal(t, 1000, c.Chunk.Size)
	require.Equal(t, 10*time.Millisecond, c.Throttle.Sleep)
	e := f.Batches["export"]
	require.Equal(t, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), e.Shards.FromTime)
	require.Equal(t, time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC), e.Shards.ToTime)
	require.Equal(t, 24*time.Hour, e.Shards.Step)
	require.Equal(t, "s3cret", e.Sink.HTTP.Secret)
	require.Equal(t, 500*time.Millisecond, e.Chunk.Target)
	require.Equal(t, config.Statements{"UPDATE orders SET status = 'closed' WHERE id IN ({ids})"}, c.Sink.SQL, "one statement as a string")
	a := f.Batches["archive"]
	require.Equal(t, "orders_archive", a.Sink.Copy.Table)
	require.Len(t, a.Sink.SQL, 1, "statements as a list")
}

func TestRejectBadBatches(t *testing.T) {
	const ok = "source: 'SELECT id FROM t'\n    key: [id]\n    sink: { sql: 'DELETE FROM t WHERE id IN ({ids})' }\n"
	b := func(s string) string { return "batches:\n  b:\n    " + s }
	requireRejected(t, b(ok+"    sorce: x"), "batches.b.sorce", "unknown key")
	requireRejected(t, b("source: 'SELECT id FROM t ORDER BY id'\n    key: [id]\n    sink: { sql: x }"), "batches.b.source", "must not contain ORDER BY")
	requireRejected(t, b("source: 'SELECT id FROM t limit 10'\n    key: [id]\n    sink: { sql: x }"), "batches.b.source", "must not contain LIMIT")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    sink: { sql: x }"), "batches.b.key", "required")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id, 'x; DROP TABLE t']\n    sink: { sql: x }"), "batches.b.key[1]", "plain identifier")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]"), "batches.b.sink", "no sink")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { sql: x, http: { url: 'http://h' } }"), "batches.b.sink", "http is set with sql or copy")
	requireRejected(t, b("source: 'SELECT id, at FROM t'\n    key: [at, id]\n    sink: { sql: ['DELETE FROM t WHERE id IN ({id})', 'DELETE FROM u WHERE id <= {max:id}'] }"),
		"batches.b.sink.sql[1]", "{max:id} needs the batch's key to be [id] alone")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { copy: { table: a } }"), "batches.b.sink.copy.db", "required")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { copy: { db: 'sqlite:a.db', table: 'a; DROP' } }"), "batches.b.sink.copy", "plain identifiers")
	requireRejected(t, b(ok+"    chunk: { target: 5 minutes }"), "batches.b.chunk.target", "invalid duration")
	requireRejected(t, b(ok+"    chunk: { size: 10, target: 1s }"), "batches.b.chunk", "not both")
	requireRejected(t, b(ok+"    chunk: { target: 1s, min: 100, max: 50 }"), "batches.b.chunk", "want min (100) <= max (50)")
	requireRejected(t, b("source: 'SELECT id FROM t WHERE a = {shard}'\n    key: [id]\n    sink: { sql: x }\n    shards: { values: [1], query: 'SELECT 1' }"), "batches.b.shards", "exactly one")
	requireRejected(t, b(ok+"    shards: { column: created_at, from: 2024-01-02, to: 2024-01-01, step: 1h }"), "batches.b.shards.to", "after from")
	requireRejected(t, b(ok+"    shards: { column: created_at, from: yesterday, to: 2024-01-01, step: 1h }"), "batches.b.shards.from", "invalid time")
	requireRejected(t, b(ok+"    shards: { values: [1] }"), "batches.b.shards", "need {shard}")
	requireRejected(t, b(ok+"    throttle: { threshold: 3 }"), "batches.b.throttle.threshold", "needs throttle.query")
	requireRejected(t, "batches:\n  'bad name':\n    "+ok, "batches.bad name", "name")
}
