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
