package batch_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/clock"
)

// hitSink is the SQL sink that counts visits per row.
func (f *fixture) hitSink() batch.SQLSink {
	return batch.SQLSink{Statements: []string{"UPDATE " + f.table + " SET hits = hits + 1 WHERE id IN ({ids})"}}
}

func (f *fixture) batch(name string) *batch.Batch {
	return &batch.Batch{
		Name:   name,
		Source: "SELECT id, created_at, tenant_id FROM " + f.table + " WHERE status = 'open'",
		Key:    []string{"created_at", "id"},
		Sink:   f.hitSink(),
	}
}

func (f *fixture) checkpoints(t *testing.T, name string) []batch.Checkpoint {
	t.Helper()
	cps, err := batch.Checkpoints(context.Background(), f.d, name)
	require.NoError(t, err)
	return cps
}

// A composite key with many ties on created_at: every row exactly once.
func TestExactlyOnceCompositeKey(t *testing.T) {
	// 40 chunks over rows that share created_at seven at a time, so that
	// most chunk boundaries fall inside a run of equal first keys: the
	// boundaries are what this checks, not the row count (200,000 rows in
	// chunks of 5,000 took 107 s of a CI run's race lane on SQLite alone).
	const n = int64(20_000)
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, n)
		b := f.batch("once")
		b.ChunkSize = 500
		require.NoError(t, b.Run(context.Background(), f.d))
		f.requireOnce(t, n)
		cps := f.checkpoints(t, "once")
		require.Len(t, cps, 1)
		require.Equal(t, batch.StatusDone, cps[0].Status)
		require.Equal(t, n, cps[0].RowsDone)
		// A second run finds the shard done and touches nothing.
		require.NoError(t, f.batch("once").Run(context.Background(), f.d))
		f.requireOnce(t, n)
	})
}

// Rows deleted ahead of the cursor are not visited, rows inserted ahead
// are, rows inserted behind the cursor are not, and no existing row is
// skipped or repeated.
func TestInsertDeleteDuringRun(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 3000)
		b := f.batch("churn")
		b.ChunkSize = 250
		chunks := 0
		b.Sink = batch.FuncSink(func(ctx context.Context, tx *sql.Tx, rows []batch.Row) error {
			for _, r := range rows {
				if _, err := tx.ExecContext(ctx, "UPDATE "+f.table+" SET hits = hits + 1 WHERE id = "+f.ph(1), r["id"]); err != nil {
					return err
				}
			}
			chunks++
			if chunks != 3 {
				return nil
			}
			// Mid-run: delete rows ahead, insert rows far ahead (late
			// created_at) and behind (early created_at, large ids).
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+f.table+" WHERE id > 2900"); err != nil {
				return err
			}
			for i, at := range map[int64]time.Time{10_001: base.Add(time.Hour), 10_002: base.Add(-time.Hour)} {
				q := fmt.Sprintf("INSERT INTO %s (id, tenant_id, created_at, status) VALUES (%s, 1, %s, 'open')", f.table, f.ph(1), f.ph(2))
				if _, err := tx.ExecContext(ctx, q, i, f.at(at)); err != nil {
					return err
				}
			}
			return nil
		})
		require.NoError(t, b.Run(context.Background(), f.d))
		require.Zero(t, f.count(t, "id <= 2900 AND hits <> 1"))
		require.Equal(t, int64(1), f.count(t, "id = 10001 AND hits = 1"), "a row inserted ahead is visited")
		require.Equal(t, int64(1), f.count(t, "id = 10002 AND hits = 0"), "a row inserted behind the cursor is not")
	})
}

// Half-open windows: rows exactly on a boundary are processed once, and
// value shards bind {shard}.
func TestShards(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		// ids 1..48: one row every 30 minutes from base, so every whole
		// hour is a boundary with a row on it.
		f.insertAt(t, 1, 48, func(id int64) time.Time { return base.Add(time.Duration(id-1) * 30 * time.Minute) })
		b := f.batch("windows")
		b.Shards = batch.Shards{Window: &batch.Window{Column: "created_at", From: base, To: base.Add(24 * time.Hour), Step: time.Hour}}
		b.ChunkSize = 1 // a chunk boundary on every row, too
		b.Parallel = 4
		require.NoError(t, b.Run(context.Background(), f.d))
		f.requireOnce(t, 48)
		cps := f.checkpoints(t, "windows")
		require.Len(t, cps, 24)
		for _, c := range cps {
			require.Equal(t, int64(2), c.RowsDone, c.Shard)
		}

		f.exec(t, "UPDATE "+f.table+" SET hits = 0")
		v := f.batch("tenants")
		v.Source = "SELECT id, created_at FROM " + f.table + " WHERE tenant_id = {shard}"
		v.Shards = batch.Shards{Values: []string{"1", "2", "3"}}
		v.ChunkSize = 5
		require.NoError(t, v.Run(context.Background(), f.d))
		f.requireOnce(t, 48)

		f.exec(t, "UPDATE "+f.table+" SET hits = 0")
		q := f.batch("tenant_query")
		q.Source = "SELECT id, created_at FROM " + f.table + " WHERE tenant_id = {shard}"
		q.Shards = batch.Shards{Query: "SELECT DISTINCT tenant_id FROM " + f.table}
		q.Parallel = 3
		require.NoError(t, q.Run(context.Background(), f.d))
		f.requireOnce(t, 48)
		require.Len(t, f.checkpoints(t, "tenant_query"), 3)
	})
}

// With an artificial cost per row, the chunk size converges toward the
// size that takes the target duration.
func TestAdaptiveSizing(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 40_000)
		b := f.batch("adaptive")
		// The chunks are timed on a clock that only the sink moves, by a
		// cost per row, so that neither the database's time nor the
		// machine's load enters the sizes. Rows cost 25µs (2000 fit the
		// target) for the first 12 chunks, then 100µs (500 fit).
		clk := clock.NewManual(time.Now())
		b.Clock = clk.Now
		chunks := 0
		b.Sink = batch.FuncSink(func(ctx context.Context, tx *sql.Tx, rows []batch.Row) error {
			perRow := 25 * time.Microsecond
			if chunks++; chunks > 12 {
				perRow = 100 * time.Microsecond
			}
			clk.Advance(time.Duration(len(rows)) * perRow)
			return nil
		})
		b.TargetChunkDuration = 50 * time.Millisecond
		b.MinChunk, b.MaxChunk = 10, 20_000
		var sizes []int
		b.Progress = func(p batch.Progress) {
			if p.ChunkSize > 0 {
				sizes = append(sizes, p.ChunkSize)
			}
		}
		require.NoError(t, b.Run(context.Background(), f.d))
		t.Logf("sizes %v", sizes)
		require.Greater(t, len(sizes), 20, "sizes %v", sizes)
		// Under the target the size grows by steps, each closing half the
		// distance to what fits, never past it…
		for i := 1; i < 13; i++ {
			require.GreaterOrEqual(t, sizes[i], sizes[i-1], "sizes %v", sizes)
			require.LessOrEqual(t, sizes[i], 2000, "sizes %v", sizes)
		}
		require.Equal(t, 1500, sizes[1], "half the way from 1000 to 2000")
		require.Equal(t, 2000, sizes[12], "sizes %v", sizes)
		// …and over it (from the 13th chunk), it is cut at once, halving at
		// most per chunk.
		require.Equal(t, []int{1000, 500}, sizes[13:15], "sizes %v", sizes)
		for _, s := range sizes[15 : len(sizes)-1] { // the very last chunk may be short
			require.Equal(t, 500, s, "sizes %v", sizes)
		}
	})
}

// While the throttle query is above the threshold the batch waits and
// says why; it goes on when the value drops, here once it has said so
// three times (waiting on state: a fixed 100 ms let a loaded machine
// poll only twice).
func TestThrottleQuery(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 500)
		knob := f.prefix + "knob"
		f.exec(t, "CREATE TABLE "+knob+" (v INT NOT NULL)")
		f.exec(t, "INSERT INTO "+knob+" (v) VALUES (5)")
		b := f.batch("throttled")
		b.ChunkSize = 100
		b.Throttle = batch.Throttle{Query: "SELECT v FROM " + knob, Threshold: 1, Poll: 20 * time.Millisecond}
		var reasons []string
		b.Progress = func(p batch.Progress) {
			if p.Throttled != "" {
				reasons = append(reasons, p.Throttled)
				require.Zero(t, p.Rows, "no chunk while throttled")
				if len(reasons) == 3 {
					f.exec(t, "UPDATE "+knob+" SET v = 0")
				}
			}
		}
		require.NoError(t, b.Run(context.Background(), f.d))
		require.GreaterOrEqual(t, len(reasons), 3)
		require.Contains(t, reasons[0], "returned 5, above the threshold 1")
		f.requireOnce(t, 500)
	})
}

// MaxRowsPerSec bounds the rate.
func TestThrottleRate(t *testing.T) {
	f := open(t, "sqlite")
	f.create(t)
	f.insert(t, 1, 300)
	b := f.batch("rate")
	b.ChunkSize = 50
	b.Throttle.MaxRowsPerSec = 1000
	start := time.Now()
	require.NoError(t, b.Run(context.Background(), f.d))
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond) // 6 chunks, 5 paced
	f.requireOnce(t, 300)
}

// Pause stops the runner at the next chunk boundary; resume lets the next
// run continue from the checkpoint.
func TestPauseResume(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		err := f.runActingAtChunk3(t, "pausable", batch.Pause)
		require.ErrorIs(t, err, batch.ErrPaused)
		cps := f.checkpoints(t, "pausable")
		require.Equal(t, batch.StatusPaused, cps[0].Status)
		require.Equal(t, int64(300), cps[0].RowsDone)
		// A run while paused refuses.
		require.ErrorIs(t, f.batch("pausable").Run(context.Background(), f.d), batch.ErrPaused)

		n, err := batch.Resume(context.Background(), f.d, "pausable")
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		b2 := f.batch("pausable")
		b2.ChunkSize = 100
		require.NoError(t, b2.Run(context.Background(), f.d))
		f.requireOnce(t, 1000)

		// Reset starts over.
		_, err = batch.Reset(context.Background(), f.d, "pausable")
		require.NoError(t, err)
		require.Empty(t, f.checkpoints(t, "pausable"))
		require.NoError(t, f.batch("pausable").Run(context.Background(), f.d))
		require.Zero(t, f.count(t, "hits <> 2"))
	})
}

// A reset while a runner is going takes its shard away: the runner stops
// at its next chunk boundary with ErrLost and writes no further chunk.
func TestResetMidRunLosesShard(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		err := f.runActingAtChunk3(t, "resettable", batch.Reset)
		require.ErrorIs(t, err, batch.ErrLost)
		require.Equal(t, int64(300), f.count(t, "hits = 1"))
		require.Empty(t, f.checkpoints(t, "resettable"))
	})
}

// A second runner of a shard that a live runner owns fails fast.
func TestSecondRunnerFailsFast(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 1000)
		first := f.batch("owned")
		first.ChunkSize = 100
		release := make(chan struct{})
		held := make(chan struct{})
		var once sync.Once
		// The first runner stops between chunks, outside any transaction,
		// holding its ownership.
		first.Progress = func(batch.Progress) {
			once.Do(func() { close(held); <-release })
		}
		done := make(chan error, 1)
		go func() { done <- first.Run(context.Background(), f.d) }()
		<-held
		start := time.Now()
		err := f.batch("owned").Run(context.Background(), f.d)
		require.ErrorIs(t, err, batch.ErrBusy)
		require.Contains(t, err.Error(), "is being run by")
		require.Less(t, time.Since(start), 2*time.Second)
		close(release)
		require.NoError(t, <-done)
		f.requireOnce(t, 1000)
	})
}

// Transient errors retry the chunk; a permanent one fails the shard with
// last_error and leaves the cursor at the last good chunk.
func TestRetryAndFailure(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 1000)
		var calls atomic.Int32
		sink := f.hitSink()
		b := f.batch("flaky")
		b.ChunkSize = 100
		b.Retry = batch.Retry{Attempts: 3, Base: time.Millisecond}
		b.Sink = batch.FuncSink(func(ctx context.Context, tx *sql.Tx, rows []batch.Row) error {
			// Do the chunk's writes first, so a retried chunk shows if its
			// rolled-back writes leaked.
			if _, err := tx.ExecContext(ctx, "UPDATE "+f.table+" SET hits = hits + 1"); err != nil {
				return err
			}
			switch c := calls.Add(1); {
			case c <= 2:
				return batch.Retryable(errors.New("flaky"))
			case c == 5:
				return errors.New("bad row")
			}
			return nil
		})
		err := b.Run(context.Background(), f.d)
		require.ErrorContains(t, err, "bad row")
		cps := f.checkpoints(t, "flaky")
		require.Equal(t, batch.StatusFailed, cps[0].Status)
		require.Contains(t, cps[0].LastError, "bad row")
		require.Equal(t, int64(200), cps[0].RowsDone) // chunks 1 and 2 (after two retries), then the failure
		require.Zero(t, f.count(t, "hits <> 2"), "failed and retried chunks leave no writes")

		f.exec(t, "UPDATE "+f.table+" SET hits = 0 WHERE id > 0")
		// Fixed: the next run resumes after the last good chunk.
		b2 := f.batch("flaky")
		b2.ChunkSize = 100
		b2.Sink = sink
		require.NoError(t, b2.Run(context.Background(), f.d))
		require.Equal(t, int64(800), f.count(t, "hits = 1"))
		cps = f.checkpoints(t, "flaky")
		require.Equal(t, batch.StatusDone, cps[0].Status)
		require.Equal(t, int64(1000), cps[0].RowsDone)
		require.Empty(t, cps[0].LastError)
	})
}

// A dry run reads the first chunk and writes nothing.
func TestDryRun(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 250)
		b := f.batch("dry")
		b.ChunkSize = 100
		res, err := b.DryRun(context.Background(), f.d)
		require.NoError(t, err)
		require.Equal(t, 100, res.Rows)
		require.Contains(t, res.SQL, "ORDER BY s.created_at, s.id LIMIT 100")
		require.Empty(t, f.checkpoints(t, "dry"))
		require.Zero(t, f.count(t, "hits <> 0"))
	})
}

func TestValidate(t *testing.T) {
	sink := batch.SQLSink{Statements: []string{"DELETE FROM t WHERE id IN ({id})"}}
	for _, tc := range []struct {
		b   batch.Batch
		msg string
	}{
		{batch.Batch{Name: "x", Source: "SELECT id FROM t ORDER BY id", Key: []string{"id"}, Sink: sink}, "must not contain ORDER BY"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t LIMIT 5", Key: []string{"id"}, Sink: sink}, "must not contain LIMIT"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id; DROP"}, Sink: sink}, "plain identifier"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Sink: sink}, "no key"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id"}}, "no sink"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t WHERE a = {shard}", Key: []string{"id"}, Sink: sink}, "no value or query shards"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id"}, Sink: sink, Shards: batch.Shards{Values: []string{"1"}}}, "need {shard}"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id"}, Sink: sink, MaxChunk: 50_000}, "chunk sizes"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id"}, Sink: batch.SQLSink{}}, "no statement"},
		{batch.Batch{Name: "x", Source: "SELECT id, created_at FROM t", Key: []string{"created_at", "id"},
			Sink: batch.SQLSink{Statements: []string{"DELETE FROM t WHERE id BETWEEN {min:id} AND {max:id}"}}}, "{min:id} needs the batch's key to be [id] alone"},
		{batch.Batch{Name: "x", Source: "SELECT id FROM t", Key: []string{"id"}, Sink: batch.CopySink{Table: "a"}}, "no destination"},
	} {
		err := tc.b.Validate()
		require.ErrorContains(t, err, tc.msg)
	}
}
