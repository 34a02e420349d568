package sluicetype

import (
	"sort"
	"time"
)

// Rollups is the database clock and the roll-ups of the 24 hours before
// it: finished attempts (sluice_stats) and queue-latency slots
// (sluice_stats_latency), in minute buckets or, once compacted, hourly
// ones. Stats and TypeStats sum them over the last hour and day; a page
// that draws charts sums them per bucket.
type Rollups struct {
	Now      time.Time
	Finished []StatRow
	Latency  []LatencyRow
}

// Queues joins live, the counts QueueCounts read, with the finished
// attempts of the buckets at or after hour (FinishedHour) and day
// (FinishedDay), and sets each queue's OldestPendingAge at now; a queue
// that only the roll-ups name is added. The result is in name order.
func (r Rollups) Queues(live []QueueStats, now, hour, day time.Time) []QueueStats {
	out := make([]QueueStats, 0, len(live))
	index := map[string]int{}
	at := func(q string) *QueueStats {
		i, ok := index[q]
		if !ok {
			i = len(out)
			index[q] = i
			out = append(out, QueueStats{Queue: q})
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
// histogram with slots doubling from 1 ms (see LatencySlots),
// interpolated within a slot: under 1 ms they are off by under 1 ms, above
// it by under a factor of 2, and above 2h19m they say "at least" that.
type LatencyStats struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_s"`
	P95   float64 `json:"p95_s"`
}

// LatencyOf summarizes a histogram; nil when it counted nothing.
func LatencyOf(h *Latency) *LatencyStats {
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
	for typ, h := range LatencyByType(r.Latency, day) {
		at(typ).LatencyDay = LatencyOf(h)
	}
	for typ, h := range LatencyByType(r.Latency, hour) {
		at(typ).LatencyHour = LatencyOf(h)
	}
	out := make([]TypeStats, 0, len(byType))
	for _, t := range byType {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
