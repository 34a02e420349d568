package batch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/metrics"
)

// Batch.Metrics counts every committed chunk, its rows and its duration
// under the batch's name, whether the shards run together (Run) or one by
// one as jobs (RunShard); a run that finds the shards done counts nothing.
func TestChunkMetrics(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		f.create(t)
		f.insert(t, 1, 250) // tenants 1 and 3 get 83 rows, tenant 2 gets 84
		m := metrics.New(nil)
		mk := func(name string) *batch.Batch {
			b := f.batch(name)
			b.Source = "SELECT id, created_at FROM " + f.table + " WHERE tenant_id = {shard}"
			b.Shards = batch.Shards{Values: []string{"1", "2", "3"}}
			b.ChunkSize = 40 // 40 + 40 + 3 or 4 rows per shard
			b.Parallel = 3
			b.Metrics = m
			return b
		}
		require.NoError(t, mk("together").Run(ctx, f.d))
		require.NoError(t, mk("together").Run(ctx, f.d))
		require.Equal(t, 250.0, m.Value("sluice_batch_rows_total", "together"))
		require.Equal(t, 9.0, m.Value("sluice_batch_chunks_total", "together"))
		require.Equal(t, 9.0, m.Value("sluice_batch_chunk_duration_seconds", "together"))

		for _, shard := range []string{"2", "2"} {
			require.NoError(t, mk("as_jobs").RunShard(ctx, f.d, shard))
		}
		require.Equal(t, 84.0, m.Value("sluice_batch_rows_total", "as_jobs"))
		require.Equal(t, 3.0, m.Value("sluice_batch_chunks_total", "as_jobs"))
		require.Equal(t, 3.0, m.Value("sluice_batch_chunk_duration_seconds", "as_jobs"))
	})
}
