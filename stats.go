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
func (c *Client) queuesAndDay(ctx context.Context, latency bool) ([]sluicetype.QueueStats, sluicetype.Rollups, error) {
	live, err := c.QueueCounts(ctx)
	if err != nil {
		return nil, sluicetype.Rollups{}, err
	}
	day, err := c.readRollups(ctx, latency)
	if err != nil {
		return nil, sluicetype.Rollups{}, err
	}
	qs := day.Queues(live, day.Now, day.Now.Add(-time.Hour), day.Now.Add(-24*time.Hour))
	if err := c.addPartitions(ctx, qs); err != nil {
		return nil, sluicetype.Rollups{}, err
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

// readRollups reads the clock and the finished attempts, and the latency
// slots if latency.
func (c *Client) readRollups(ctx context.Context, latency bool) (sluicetype.Rollups, error) {
	now, err := c.drv.Now(ctx)
	if err != nil {
		return sluicetype.Rollups{}, err
	}
	since := driver.ReadStatsParams{Since: now.Add(-24 * time.Hour)}
	r := sluicetype.Rollups{Now: now}
	if r.Finished, err = c.drv.ReadStats(ctx, since); err != nil {
		return sluicetype.Rollups{}, err
	}
	if latency {
		if r.Latency, err = c.drv.ReadLatency(ctx, since); err != nil {
			return sluicetype.Rollups{}, err
		}
	}
	return r, nil
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

// StatsSnapshot is the whole picture that /v1/stats and `sluice stats
// --json` show. Every list is empty rather than nil, so that JSON has []
// for it, never null. The fields stand in the order of their JSON names,
// which is the order these documents have had since they were maps.
type StatsSnapshot struct {
	Circuits    []sluicetype.Circuit    `json:"circuits"`
	Queues      []sluicetype.QueueStats `json:"queues"`
	RateBuckets []sluicetype.RateBucket `json:"rate_buckets"`
	Types       []sluicetype.TypeStats  `json:"types"`
	// UnservedQueues: see Client.UnservedQueues.
	UnservedQueues []sluicetype.QueueCount `json:"unserved_queues"`
	// WaitingForHandler: see Client.WaitingForHandler.
	WaitingForHandler []sluicetype.TypeCount `json:"waiting_for_handler"`
}

// StatsSnapshot reads Stats, Circuits, RateBuckets, TypeStats,
// UnservedQueues and WaitingForHandler at once, the clock and the day's roll-ups once for
// both the queues and the types.
func (c *Client) StatsSnapshot(ctx context.Context) (StatsSnapshot, error) {
	var s StatsSnapshot
	var day sluicetype.Rollups
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
	if s.UnservedQueues, err = c.UnservedQueues(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	if s.WaitingForHandler, err = c.WaitingForHandler(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	// [] in JSON, never null, for the lists that read no rows.
	if s.UnservedQueues == nil {
		s.UnservedQueues = []sluicetype.QueueCount{}
	}
	if s.WaitingForHandler == nil {
		s.WaitingForHandler = []sluicetype.TypeCount{}
	}
	return s, nil
}

// Rollups reads the database clock and the day of roll-ups before it.
func (c *Client) Rollups(ctx context.Context) (sluicetype.Rollups, error) {
	return c.readRollups(ctx, true)
}

// TypeStats reads per-type counts and queue latency percentiles over the
// last hour and day (of database time) from the roll-ups, sorted by type.
func (c *Client) TypeStats(ctx context.Context) ([]sluicetype.TypeStats, error) {
	r, err := c.Rollups(ctx)
	if err != nil {
		return nil, err
	}
	return r.Types(r.Now.Add(-time.Hour), r.Now.Add(-24*time.Hour)), nil
}
