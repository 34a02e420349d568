package sluice

import (
	"context"
	"sort"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// TopPartitions is how many partitions Stats lists per queue. It bounds
// the output, as the number of partitions (tenants) is not; for the same
// reason no metric has a partition label.
const TopPartitions = 10

// ApplyTo fills in s's settings from q (Fair, MaxRunning and the caps of
// its partitions): a client that runs no workers (the CLI's) has the
// config file's queues instead of its own.
func (q QueueConfig) ApplyTo(s *sluicetype.QueueStats) {
	s.Fair, s.MaxRunning = q.Fair, q.MaxRunning
	caps := driver.RunningCaps{Partition: q.MaxRunningPerPartition, Partitions: q.PartitionMaxRunning}
	for i := range s.Partitions {
		s.Partitions[i].MaxRunning = caps.PartitionCap(s.Partitions[i].Partition)
	}
}

// Stats reads per-queue counts from indexes that hold live jobs only, and
// the finished attempts of the last hour and day from the roll-ups.
func (c *Client) Stats(ctx context.Context) ([]sluicetype.QueueStats, error) {
	qs, _, err := c.queuesAndDay(ctx, false)
	return qs, err
}

// queuesAndDay reads the queue statistics, and returns the roll-ups they
// were summed from (with the latency slots if latency) for the type
// statistics to reuse.
func (c *Client) queuesAndDay(ctx context.Context, latency bool) ([]sluicetype.QueueStats, Rollups, error) {
	live, err := c.QueueCounts(ctx)
	if err != nil {
		return nil, Rollups{}, err
	}
	day, err := c.readRollups(ctx, latency)
	if err != nil {
		return nil, Rollups{}, err
	}
	qs := day.Queues(live, day.Now, day.Now.Add(-time.Hour), day.Now.Add(-24*time.Hour))
	if err := c.addPartitions(ctx, qs); err != nil {
		return nil, Rollups{}, err
	}
	c.applyConfig(qs)
	return qs, day, nil
}

// QueueCounts reads every queue's live counts and paused flag, in name
// order: one read of the live-rows indexes and one of the small queues
// table, without the roll-ups. A page that polls every few seconds reads
// it on each tick and the roll-ups (Rollups) less often; Rollups.Queues
// joins the two.
func (c *Client) QueueCounts(ctx context.Context) ([]sluicetype.QueueStats, error) {
	rows, err := c.drv.Stats(ctx)
	if err != nil {
		return nil, err
	}
	paused, err := c.drv.PausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Paused = paused[rows[i].Queue]
		delete(paused, rows[i].Queue)
	}
	for q := range paused {
		rows = append(rows, sluicetype.QueueStats{Queue: q, Paused: true})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Queue < rows[j].Queue })
	return rows, nil
}

// Rollups is the database clock and the roll-ups of the 24 hours before
// it: finished attempts (sluice_stats) and queue-latency slots
// (sluice_stats_latency), in minute buckets or, once compacted, hourly
// ones. Stats and TypeStats sum them over the last hour and day; a page
// that draws charts sums them per bucket.
type Rollups struct {
	Now      time.Time
	Finished []sluicetype.StatRow
	Latency  []sluicetype.LatencyRow
}

// Rollups reads the database clock and the day of roll-ups before it.
func (c *Client) Rollups(ctx context.Context) (Rollups, error) {
	return c.readRollups(ctx, true)
}

// readRollups reads the clock and the finished attempts, and the latency
// slots if latency.
func (c *Client) readRollups(ctx context.Context, latency bool) (Rollups, error) {
	now, err := c.drv.Now(ctx)
	if err != nil {
		return Rollups{}, err
	}
	since := driver.ReadStatsParams{Since: now.Add(-24 * time.Hour)}
	r := Rollups{Now: now}
	if r.Finished, err = c.drv.ReadStats(ctx, since); err != nil {
		return Rollups{}, err
	}
	if latency {
		if r.Latency, err = c.drv.ReadLatency(ctx, since); err != nil {
			return Rollups{}, err
		}
	}
	return r, nil
}

// Queues joins live, the counts QueueCounts read, with the finished
// attempts of the buckets at or after hour (FinishedHour) and day
// (FinishedDay), and sets each queue's OldestPendingAge at now; a queue
// that only the roll-ups name is added. The result is in name order.
func (r Rollups) Queues(live []sluicetype.QueueStats, now, hour, day time.Time) []sluicetype.QueueStats {
	out := make([]sluicetype.QueueStats, 0, len(live))
	index := map[string]int{}
	at := func(q string) *sluicetype.QueueStats {
		i, ok := index[q]
		if !ok {
			i = len(out)
			index[q] = i
			out = append(out, sluicetype.QueueStats{Queue: q})
		}
		return &out[i]
	}
	for _, s := range live {
		q := at(s.Queue)
		*q = s
		q.OldestPendingAge = s.PendingAge(now).Seconds()
		q.FinishedHour, q.FinishedDay = map[string]int64{}, map[string]int64{}
	}
	for _, f := range r.Finished {
		if f.Bucket.Before(day) {
			continue
		}
		q := at(f.Queue)
		if q.FinishedDay == nil {
			q.FinishedHour, q.FinishedDay = map[string]int64{}, map[string]int64{}
		}
		q.FinishedDay[string(f.Outcome)] += f.Count
		if !f.Bucket.Before(hour) {
			q.FinishedHour[string(f.Outcome)] += f.Count
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out
}

// applyConfig fills in the settings of the queues this client configures.
func (c *Client) applyConfig(qs []sluicetype.QueueStats) {
	for i := range qs {
		if qc, ok := c.cfg.Queues[qs[i].Queue]; ok {
			qc.ApplyTo(&qs[i])
		}
	}
}

// addPartitions adds every queue's top partitions to the queue of qs
// that holds it (a queue not in qs is left out), in one query: one per
// queue took seconds with 10,000 queues.
func (c *Client) addPartitions(ctx context.Context, qs []sluicetype.QueueStats) error {
	parts, err := c.drv.PartitionStats(ctx, driver.PartitionStatsParams{Limit: TopPartitions})
	if err != nil {
		return err
	}
	index := make(map[string]int, len(qs))
	for i, q := range qs {
		index[q.Queue] = i
	}
	for _, p := range parts {
		if i, ok := index[p.Queue]; ok {
			qs[i].Partitions = append(qs[i].Partitions, p)
		}
	}
	return nil
}

// QueuePartitions returns, for each of queues, its top partitions and
// its settings (Fair, MaxRunning and the partitions' caps), without the
// counts Stats reads: for a page that has them already and shows a few of
// many queues.
func (c *Client) QueuePartitions(ctx context.Context, queues []string) ([]sluicetype.QueueStats, error) {
	out := make([]sluicetype.QueueStats, len(queues))
	for i, q := range queues {
		out[i].Queue = q
	}
	if err := c.addPartitions(ctx, out); err != nil {
		return nil, err
	}
	c.applyConfig(out)
	return out, nil
}

// TypeStats is one job type's finished attempts and queue latency over
// the last hour and day, from the roll-ups (sluice_stats and
// sluice_stats_latency), never from counting finished rows.
type TypeStats struct {
	Type string `json:"type"`
	// Finished attempts by outcome (success, retry, failed, cancelled).
	FinishedHour map[string]int64 `json:"finished_1h"`
	FinishedDay  map[string]int64 `json:"finished_24h"`
	// Queue latency of the attempts that started; nil when none did.
	LatencyHour *LatencyStats `json:"queue_latency_1h"`
	LatencyDay  *LatencyStats `json:"queue_latency_24h"`
}

// LatencyStats is the p50 and p95 of the queue latencies (next_run_at to
// the claim, in database time) of Count attempts. They come from a
// histogram with slots doubling from 1 ms (see sluicetype.LatencySlots),
// interpolated within a slot: under 1 ms they are off by under 1 ms, above
// it by under a factor of 2, and above 2h19m they say "at least" that.
type LatencyStats struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_s"`
	P95   float64 `json:"p95_s"`
}

// LatencyOf summarizes a histogram; nil when it counted nothing.
func LatencyOf(h *sluicetype.Latency) *LatencyStats {
	if h == nil {
		return nil
	}
	p50, ok := h.Quantile(0.5)
	if !ok {
		return nil
	}
	p95, _ := h.Quantile(0.95)
	// Microseconds: the interpolation's nanoseconds are noise, and they
	// would show as 124.518399999 in JSON.
	return &LatencyStats{Count: h.Count(), P50: p50.Round(time.Microsecond).Seconds(), P95: p95.Round(time.Microsecond).Seconds()}
}

// TypeStats reads per-type counts and queue latency percentiles over the
// last hour and day (of database time) from the roll-ups, sorted by type.
func (c *Client) TypeStats(ctx context.Context) ([]TypeStats, error) {
	r, err := c.Rollups(ctx)
	if err != nil {
		return nil, err
	}
	return r.Types(r.Now.Add(-time.Hour), r.Now.Add(-24*time.Hour)), nil
}

// Types sums the roll-ups per type over the buckets at or after hour and
// day, sorted by type.
func (r Rollups) Types(hour, day time.Time) []TypeStats {
	byType := map[string]*TypeStats{}
	at := func(typ string) *TypeStats {
		t := byType[typ]
		if t == nil {
			t = &TypeStats{Type: typ, FinishedHour: map[string]int64{}, FinishedDay: map[string]int64{}}
			byType[typ] = t
		}
		return t
	}
	for _, f := range r.Finished {
		if f.Bucket.Before(day) {
			continue
		}
		t := at(f.Type)
		t.FinishedDay[string(f.Outcome)] += f.Count
		if !f.Bucket.Before(hour) {
			t.FinishedHour[string(f.Outcome)] += f.Count
		}
	}
	for typ, h := range sluicetype.LatencyByType(r.Latency, day) {
		at(typ).LatencyDay = LatencyOf(h)
	}
	for typ, h := range sluicetype.LatencyByType(r.Latency, hour) {
		at(typ).LatencyHour = LatencyOf(h)
	}
	out := make([]TypeStats, 0, len(byType))
	for _, t := range byType {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// StatsSnapshot is the whole picture that /v1/stats and `sluice stats
// --json` show. Every list is empty rather than nil, so that JSON has []
// for it, never null. The fields stand in the order of their JSON names,
// which is the order these documents have had since they were maps.
type StatsSnapshot struct {
	Circuits    []sluicetype.Circuit    `json:"circuits"`
	Queues      []sluicetype.QueueStats `json:"queues"`
	RateBuckets []sluicetype.RateBucket `json:"rate_buckets"`
	Types       []TypeStats             `json:"types"`
	// WaitingForHandler: see Client.WaitingForHandler.
	WaitingForHandler []sluicetype.TypeCount `json:"waiting_for_handler"`
}

// StatsSnapshot reads Stats, Circuits, RateBuckets, TypeStats and
// WaitingForHandler at once, the clock and the day's roll-ups once for
// both the queues and the types.
func (c *Client) StatsSnapshot(ctx context.Context) (StatsSnapshot, error) {
	var s StatsSnapshot
	var day Rollups
	var err error
	if s.Queues, day, err = c.queuesAndDay(ctx, true); err != nil {
		return StatsSnapshot{}, err
	}
	if s.Circuits, err = c.Circuits(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	if s.RateBuckets, err = c.RateBuckets(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	s.Types = day.Types(day.Now.Add(-time.Hour), day.Now.Add(-24*time.Hour))
	if s.WaitingForHandler, err = c.WaitingForHandler(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	return s, nil
}
