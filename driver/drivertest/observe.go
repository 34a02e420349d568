package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseObserve(t *testing.T, open Opener) {
	t.Run("StatsAddUp", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		min0 := b.now().UTC().Truncate(time.Minute)
		add := func(rows ...sluicetype.StatRow) {
			require.NoError(t, b.d.AddStats(b.ctx, driver.AddStatsParams{Rows: rows}))
		}
		add(sluicetype.StatRow{Queue: "q", Type: "t", Outcome: sluicetype.OutcomeSuccess, Bucket: min0, Count: 3},
			sluicetype.StatRow{Queue: "q", Type: "t", Outcome: sluicetype.OutcomeFailed, Bucket: min0, Count: 1})
		add(sluicetype.StatRow{Queue: "q", Type: "t", Outcome: sluicetype.OutcomeSuccess, Bucket: min0, Count: 4})
		rows, err := b.d.ReadStats(b.ctx, driver.ReadStatsParams{Since: min0.Add(-time.Minute)})
		require.NoError(t, err)
		got := map[sluicetype.Outcome]int64{}
		for _, r := range rows {
			require.True(t, r.Bucket.Equal(min0), "bucket %s, want %s", r.Bucket, min0)
			got[r.Outcome] += r.Count
		}
		require.Equal(t, map[sluicetype.Outcome]int64{"success": 7, "failed": 1}, got)
	})

	t.Run("CompactToHours", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		hour := b.now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
		var rows []sluicetype.StatRow
		for m := 0; m < 60; m += 10 {
			rows = append(rows, sluicetype.StatRow{Queue: "q", Type: "t", Outcome: "success", Bucket: hour.Add(time.Duration(m) * time.Minute), Count: 2})
		}
		recent := sluicetype.StatRow{Queue: "q", Type: "t", Outcome: "success", Bucket: hour.Add(4*time.Hour + 7*time.Minute), Count: 5}
		rows = append(rows, recent)
		require.NoError(t, b.d.AddStats(b.ctx, driver.AddStatsParams{Rows: rows}))
		// Twice: compaction must be idempotent.
		for range 2 {
			require.NoError(t, b.d.CompactStats(b.ctx, driver.CompactStatsParams{Before: hour.Add(2 * time.Hour)}))
		}
		got, err := b.d.ReadStats(b.ctx, driver.ReadStatsParams{Since: hour.Add(-time.Hour)})
		require.NoError(t, err)
		require.Len(t, got, 2, "%+v", got)
		require.True(t, got[0].Bucket.Equal(hour))
		require.EqualValues(t, 12, got[0].Count)
		require.True(t, got[1].Bucket.Equal(recent.Bucket), "buckets after the cutoff stay per minute")
		require.EqualValues(t, 5, got[1].Count)
	})

	t.Run("Nodes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		started := b.now().Add(-time.Minute)
		n := sluicetype.Node{ID: "host:1", Version: "v1", StartedAt: started, Concurrency: 10, Running: 3}
		require.NoError(t, b.d.UpsertNode(b.ctx, n))
		n.Running = 4
		require.NoError(t, b.d.UpsertNode(b.ctx, n))
		require.NoError(t, b.d.UpsertNode(b.ctx, sluicetype.Node{ID: "host:2", Version: "v1", StartedAt: started}))
		nodes, err := b.d.ListNodes(b.ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		require.Equal(t, "host:1", nodes[0].ID)
		require.Equal(t, 4, nodes[0].Running)
		require.Equal(t, 10, nodes[0].Concurrency)
		require.WithinDuration(t, started, nodes[0].StartedAt, clockSlack)
		require.WithinDuration(t, b.now(), nodes[0].LastSeen, 5*time.Second)

		purged, err := b.d.PurgeNodes(b.ctx, driver.PurgeNodesParams{StaleAfter: time.Hour})
		require.NoError(t, err)
		require.Zero(t, purged, "fresh rows are not stale")
		require.NoError(t, b.d.DeleteNode(b.ctx, "host:2"))
		time.Sleep(20 * time.Millisecond)
		purged, err = b.d.PurgeNodes(b.ctx, driver.PurgeNodesParams{StaleAfter: 10 * time.Millisecond})
		require.NoError(t, err)
		require.EqualValues(t, 1, purged)
		nodes, err = b.d.ListNodes(b.ctx)
		require.NoError(t, err)
		require.Empty(t, nodes)
	})

	t.Run("ListLeasesAndCheckpoints", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "b", Holder: "n1", TTL: time.Minute})
		require.NoError(t, err)
		_, err = b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "a", Holder: "n2", TTL: time.Minute})
		require.NoError(t, err)
		ls, err := b.d.ListLeases(b.ctx)
		require.NoError(t, err)
		require.Len(t, ls, 2)
		require.Equal(t, []string{"a", "b"}, []string{ls[0].Name, ls[1].Name})
		require.Equal(t, "n2", ls[0].Holder)
		require.Positive(t, ls[0].Fence)
		require.True(t, ls[0].Until.After(ls[0].Since))

		cps, err := b.d.ListCheckpoints(b.ctx)
		require.NoError(t, err)
		require.Empty(t, cps)
	})
}
