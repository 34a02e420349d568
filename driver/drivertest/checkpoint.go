package drivertest

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The checkpoint statuses of package batch, which the schema's CHECK allows.
const (
	cpRunning = "running"
	cpPaused  = "paused"
	cpDone    = "done"
	cpFailed  = "failed"
)

func exerciseCheckpoint(t *testing.T, open Opener) {
	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.d.GetCheckpoint(b.ctx, driver.GetCheckpointParams{Batch: "orders", Shard: "all"})
		require.ErrorIs(t, err, sluicetype.ErrCheckpointLost, "a shard without a checkpoint")

		before := b.now()
		for _, p := range []driver.CreateCheckpointParams{
			{Batch: "orders", Shard: "b", Status: cpRunning, ChunkSize: 500},
			{Batch: "orders", Shard: "a", Status: cpRunning, ChunkSize: 500},
			{Batch: "archive", Shard: "z", Status: cpRunning, ChunkSize: 10},
		} {
			require.NoError(t, b.d.CreateCheckpoint(b.ctx, p))
		}
		after := b.now()
		c := b.checkpoint("orders", "a")
		require.Equal(t, "orders", c.Batch)
		require.Equal(t, "a", c.Shard)
		require.Equal(t, cpRunning, c.Status)
		require.Equal(t, 500, c.ChunkSize)
		require.Empty(t, c.Cursor)
		require.Empty(t, c.Owner)
		require.Empty(t, c.LastError)
		require.Zero(t, c.RowsDone)
		require.Zero(t, c.ChunksDone)
		requireBetween(t, c.CreatedAt, before, after, "created_at")

		// Creating an existing checkpoint changes nothing, so every runner may call it.
		require.NoError(t, b.d.CreateCheckpoint(b.ctx, driver.CreateCheckpointParams{Batch: "orders", Shard: "a", Status: cpPaused, ChunkSize: 7}))
		require.Equal(t, c, b.checkpoint("orders", "a"))

		cps, err := b.d.ListCheckpoints(b.ctx)
		require.NoError(t, err)
		var names []string
		for _, c := range cps {
			names = append(names, c.Batch+"/"+c.Shard)
		}
		require.Equal(t, []string{"archive/z", "orders/a", "orders/b"}, names, "ordered by batch and shard")
	})

	// Every write but Touch moves the version on, and a write at a version
	// that has moved on is refused with ErrCheckpointLost: that is how a
	// runner learns that another took its shard over.
	t.Run("FencedWrites", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const bt, sh = "orders", "all"
		require.NoError(t, b.d.CreateCheckpoint(b.ctx, driver.CreateCheckpointParams{Batch: bt, Shard: sh, Status: cpRunning, ChunkSize: 100}))
		v0 := b.checkpoint(bt, sh).Version

		take := func(v int64, owner string) error {
			return b.d.TakeCheckpoint(b.ctx, driver.TakeCheckpointParams{Batch: bt, Shard: sh, Version: v, Owner: owner, Status: cpRunning})
		}
		require.NoError(t, take(v0, "r1"))
		c := b.checkpoint(bt, sh)
		require.Equal(t, v0+1, c.Version)
		require.Equal(t, "r1", c.Owner)
		// A second runner that read the same version loses the race.
		require.ErrorIs(t, take(v0, "r2"), sluicetype.ErrCheckpointLost)
		require.Equal(t, "r1", b.checkpoint(bt, sh).Owner)

		// The chunk's transaction carries the checkpoint: rolled back, the
		// chunk is not recorded; committed, it is.
		adv := driver.AdvanceCheckpointParams{Batch: bt, Shard: sh, Version: v0 + 1, Cursor: `[100]`, Rows: 100, ChunkSize: 100}
		in := func(tx *sql.Tx) driver.AdvanceCheckpointParams { p := adv; p.Tx = tx; return p }
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		require.NoError(t, b.d.AdvanceCheckpoint(b.ctx, in(tx)))
		require.NoError(t, tx.Rollback())
		require.Equal(t, c, b.checkpoint(bt, sh), "a rolled-back advance leaves no trace")
		tx, err = b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		require.NoError(t, b.d.AdvanceCheckpoint(b.ctx, in(tx)))
		require.NoError(t, tx.Commit())
		adv.Version, adv.Cursor, adv.Rows, adv.ChunkSize = v0+2, `[150]`, 50, 200
		require.NoError(t, b.d.AdvanceCheckpoint(b.ctx, in(nil)))
		c = b.checkpoint(bt, sh)
		require.Equal(t, `[150]`, c.Cursor)
		require.EqualValues(t, 150, c.RowsDone)
		require.EqualValues(t, 2, c.ChunksDone)
		require.Equal(t, 200, c.ChunkSize)
		require.Equal(t, v0+3, c.Version)
		// A stale advance, in a transaction or not, writes nothing.
		adv.Version = v0 + 2
		require.ErrorIs(t, b.d.AdvanceCheckpoint(b.ctx, in(nil)), sluicetype.ErrCheckpointLost)
		tx, err = b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		require.ErrorIs(t, b.d.AdvanceCheckpoint(b.ctx, in(tx)), sluicetype.ErrCheckpointLost)
		require.NoError(t, tx.Rollback())
		require.Equal(t, c, b.checkpoint(bt, sh))

		// Touch refreshes the lease without moving the version.
		touch := driver.TouchCheckpointParams{Batch: bt, Shard: sh, Version: c.Version}
		require.NoError(t, b.d.TouchCheckpoint(b.ctx, touch))
		require.Equal(t, c.Version, b.checkpoint(bt, sh).Version)
		touch.Version--
		require.ErrorIs(t, b.d.TouchCheckpoint(b.ctx, touch), sluicetype.ErrCheckpointLost)

		// Release needs the owner as well as the version.
		rel := driver.ReleaseCheckpointParams{Batch: bt, Shard: sh, Version: c.Version, Owner: "r2"}
		require.ErrorIs(t, b.d.ReleaseCheckpoint(b.ctx, rel), sluicetype.ErrCheckpointLost)
		rel.Owner = "r1"
		require.NoError(t, b.d.ReleaseCheckpoint(b.ctx, rel))
		c = b.checkpoint(bt, sh)
		require.Empty(t, c.Owner)
		require.Equal(t, rel.Version+1, c.Version)

		// Finish records the error, cut to the column limit, and a take
		// clears it again.
		require.NoError(t, take(c.Version, "r3"))
		long := strings.Repeat("x", sluicetype.MaxErrorLen+100)
		fin := driver.FinishCheckpointParams{Batch: bt, Shard: sh, Version: c.Version + 1, Status: cpFailed, Error: long}
		require.NoError(t, b.d.FinishCheckpoint(b.ctx, fin))
		c = b.checkpoint(bt, sh)
		require.Equal(t, cpFailed, c.Status)
		require.Equal(t, long[:sluicetype.MaxErrorLen], c.LastError)
		require.Empty(t, c.Owner)
		require.ErrorIs(t, b.d.FinishCheckpoint(b.ctx, fin), sluicetype.ErrCheckpointLost)
		require.NoError(t, take(c.Version, "r4"))
		c = b.checkpoint(bt, sh)
		require.Empty(t, c.LastError)
		require.Equal(t, cpRunning, c.Status)
		require.NoError(t, b.d.FinishCheckpoint(b.ctx, driver.FinishCheckpointParams{Batch: bt, Shard: sh, Version: c.Version, Status: cpDone}))
		require.Equal(t, cpDone, b.checkpoint(bt, sh).Status)
	})

	t.Run("StatusAndDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, sh := range []string{"a", "b", "c"} {
			require.NoError(t, b.d.CreateCheckpoint(b.ctx, driver.CreateCheckpointParams{Batch: "orders", Shard: sh, Status: cpRunning}))
		}
		require.NoError(t, b.d.CreateCheckpoint(b.ctx, driver.CreateCheckpointParams{Batch: "other", Shard: "a", Status: cpRunning}))
		c := b.checkpoint("orders", "c")
		require.NoError(t, b.d.TakeCheckpoint(b.ctx, driver.TakeCheckpointParams{Batch: "orders", Shard: "c", Version: c.Version, Status: cpRunning}))
		require.NoError(t, b.d.FinishCheckpoint(b.ctx, driver.FinishCheckpointParams{Batch: "orders", Shard: "c", Version: c.Version + 1, Status: cpDone}))

		n, err := b.d.SetCheckpointStatus(b.ctx, driver.SetCheckpointStatusParams{Batch: "orders", Status: cpPaused, From: []string{cpRunning, cpFailed}})
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "the done shard and the other batch stay")
		require.Equal(t, cpPaused, b.checkpoint("orders", "a").Status)
		require.Equal(t, cpDone, b.checkpoint("orders", "c").Status)
		require.Equal(t, cpRunning, b.checkpoint("other", "a").Status)
		_, err = b.d.SetCheckpointStatus(b.ctx, driver.SetCheckpointStatusParams{Batch: "orders", Status: cpRunning})
		require.Error(t, err, "no statuses to move from")

		n, err = b.d.DeleteCheckpoints(b.ctx, driver.DeleteCheckpointsParams{Batch: "orders"})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		_, err = b.d.GetCheckpoint(b.ctx, driver.GetCheckpointParams{Batch: "orders", Shard: "a"})
		require.ErrorIs(t, err, sluicetype.ErrCheckpointLost)
		require.Equal(t, cpRunning, b.checkpoint("other", "a").Status)
	})
}

func (b *bundle) checkpoint(batch, shard string) sluicetype.Checkpoint {
	b.t.Helper()
	c, err := b.d.GetCheckpoint(b.ctx, driver.GetCheckpointParams{Batch: batch, Shard: shard})
	require.NoError(b.t, err)
	return c
}
