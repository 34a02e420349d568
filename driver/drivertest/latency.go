package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseLatency checks the queue-latency roll-ups (sluice_stats_latency):
// the claim's database times they are measured from, slots that add up,
// reads bounded by a clock the caller gives, percentiles from the summed
// slots, and compaction to hours.
func exerciseLatency(t *testing.T, open Opener) {
	t.Run("ClaimMeasuresWaitInDatabaseTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Every claim path: the plain one, one type, and a fair claim.
		for _, fair := range []bool{false, true} {
			for _, typ := range []string{"", "late"} {
				now := b.now()
				p := newJob("late")
				p.Queue, p.RunAt = randomName("q"), now.Add(-5*time.Second)
				id := b.insertOne(p)
				jobs := b.claim(driver.ClaimParams{Queue: p.Queue, Types: typeList(typ), Limit: 1, Lease: time.Minute, Token: newToken(), Fair: fair})
				require.Len(t, jobs, 1)
				require.Equal(t, id, jobs[0].ID)
				after := b.now()
				// updated_at is the claim's database time: between the
				// clock readings around it.
				require.False(t, jobs[0].UpdatedAt.Before(now.Add(-clockSlack)), "fair=%v type=%q: claimed at %s, before %s", fair, typ, jobs[0].UpdatedAt, now)
				require.False(t, jobs[0].UpdatedAt.After(after.Add(clockSlack)), "fair=%v type=%q: claimed at %s, after %s", fair, typ, jobs[0].UpdatedAt, after)
				waited := jobs[0].QueueLatency()
				require.GreaterOrEqual(t, waited, 5*time.Second-clockSlack, "fair=%v type=%q", fair, typ)
				require.LessOrEqual(t, waited, 5*time.Second+after.Sub(now)+clockSlack, "fair=%v type=%q", fair, typ)
			}
		}
	})

	t.Run("SlotsAddUpAndPercentiles", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// The injected clock: a fixed instant, not the database's now, so
		// that the windows hold exactly the buckets placed in them.
		now := time.Date(2026, 3, 4, 12, 30, 15, 0, time.UTC)
		hour, day := now.Add(-time.Hour), now.Add(-24*time.Hour)
		min0 := now.Truncate(time.Minute)
		slot := func(d time.Duration) int { return sluicetype.LatencySlot(d) }
		row := func(typ string, at time.Time, wait time.Duration, n int64) sluicetype.LatencyRow {
			return sluicetype.LatencyRow{Queue: "q", Type: typ, Bucket: at, Slot: slot(wait), Count: n}
		}
		add := func(rows ...sluicetype.LatencyRow) {
			require.NoError(t, b.d.AddStats(b.ctx, driver.AddStatsParams{Latency: rows}))
		}
		// In the last hour, type "t": 90 attempts waited ~3 ms (slot
		// [2, 4) ms) and 10 waited ~3 s (slot [2.048, 4.096) s), in two
		// flushes of the same minute bucket and one other minute.
		add(row("t", min0, 3*time.Millisecond, 40), row("t", min0, 3*time.Second, 4))
		add(row("t", min0, 3*time.Millisecond, 50), row("t", min0.Add(-10*time.Minute), 3*time.Second, 6))
		// Earlier in the day: 300 attempts waited ~100 s (slot [65.536,
		// 131.072) s). Before the day, and another type: not counted.
		add(row("t", min0.Add(-5*time.Hour), 100*time.Second, 300),
			row("t", day.Add(-time.Minute), time.Hour, 1000),
			row("other", min0, time.Hour, 7))

		rows, err := b.d.ReadLatency(b.ctx, driver.ReadStatsParams{Since: day})
		require.NoError(t, err)
		for _, r := range rows {
			require.False(t, r.Bucket.Before(day), "bucket %s read before the day's start %s", r.Bucket, day)
		}
		// The same minute and slot from two flushes is one row.
		got := map[[2]int64]int64{}
		for _, r := range rows {
			if r.Type == "t" && r.Bucket.Equal(min0) {
				got[[2]int64{r.Bucket.Unix(), int64(r.Slot)}] += r.Count
				require.Contains(t, []int64{90, 4}, r.Count, "%+v", r)
			}
		}
		require.Len(t, got, 2)

		hourH := sluicetype.LatencyByType(rows, hour)["t"]
		require.NotNil(t, hourH)
		require.EqualValues(t, 100, hourH.Count())
		p50, ok := hourH.Quantile(0.5)
		require.True(t, ok)
		require.GreaterOrEqual(t, p50, 2*time.Millisecond)
		require.Less(t, p50, 4*time.Millisecond)
		p95, _ := hourH.Quantile(0.95)
		require.GreaterOrEqual(t, p95, 2048*time.Millisecond)
		require.Less(t, p95, 4096*time.Millisecond)
		// Interpolated: the 95th of 100 is half-way through the 10 in the
		// [2.048, 4.096) s slot.
		require.InDelta(t, float64(3072*time.Millisecond), float64(p95), float64(time.Millisecond))

		dayH := sluicetype.LatencyByType(rows, day)["t"]
		require.EqualValues(t, 400, dayH.Count(), "the bucket before the day is not read")
		for _, q := range []float64{0.5, 0.95} {
			p, _ := dayH.Quantile(q)
			require.GreaterOrEqual(t, p, 65536*time.Millisecond, "q%v: three quarters of the day's attempts waited ~100 s", q)
			require.Less(t, p, 131072*time.Millisecond, "q%v", q)
		}
		require.EqualValues(t, 7, sluicetype.LatencyByType(rows, day)["other"].Count())
	})

	t.Run("CompactToHours", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		hour := time.Date(2026, 3, 4, 7, 0, 0, 0, time.UTC)
		var rows []sluicetype.LatencyRow
		for m := 0; m < 60; m += 10 {
			at := hour.Add(time.Duration(m) * time.Minute)
			rows = append(rows, sluicetype.LatencyRow{Queue: "q", Type: "t", Bucket: at, Slot: 3, Count: 2},
				sluicetype.LatencyRow{Queue: "q", Type: "t", Bucket: at, Slot: 12, Count: 1})
		}
		recent := sluicetype.LatencyRow{Queue: "q", Type: "t", Bucket: hour.Add(4*time.Hour + 7*time.Minute), Slot: 3, Count: 5}
		rows = append(rows, recent)
		require.NoError(t, b.d.AddStats(b.ctx, driver.AddStatsParams{Latency: rows}))
		// Twice: compaction must be idempotent.
		for range 2 {
			require.NoError(t, b.d.CompactStats(b.ctx, driver.CompactStatsParams{Before: hour.Add(2 * time.Hour)}))
		}
		got, err := b.d.ReadLatency(b.ctx, driver.ReadStatsParams{Since: hour.Add(-time.Hour)})
		require.NoError(t, err)
		require.Len(t, got, 3, "%+v", got)
		bySlot := map[int]int64{}
		for _, r := range got[:2] {
			require.True(t, r.Bucket.Equal(hour), "%+v", r)
			bySlot[r.Slot] = r.Count
		}
		require.Equal(t, map[int]int64{3: 12, 12: 6}, bySlot)
		require.True(t, got[2].Bucket.Equal(recent.Bucket), "buckets after the cutoff stay per minute")
		require.EqualValues(t, 5, got[2].Count)
	})

	t.Run("SlotOutOfRange", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		err := b.d.AddStats(b.ctx, driver.AddStatsParams{Latency: []sluicetype.LatencyRow{{Queue: "q", Type: "t", Bucket: b.now().Truncate(time.Minute), Slot: sluicetype.LatencySlots, Count: 1}}})
		require.ErrorContains(t, err, "latency slot")
	})
}
