package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The overview and queue pages poll /live.json. Every viewer gets the same
// snapshot, rebuilt at most once per tick whoever asks, and only while
// someone asks:
//   - every liveTick, the live-rows Stats query (one read of the partial
//     indexes over pending, processing and failed jobs) and the paused
//     flags (a read of the small queues table: a pause from the CLI or
//     another process shows within a tick, not a roll-up period);
//   - every rollTick, the database clock and the day of
//     roll-ups (sluice_stats, one row per queue, type, outcome and minute,
//     and sluice_stats_latency, one per queue, type, minute and latency
//     histogram slot).
//
// Polling rather than server-sent events: it needs no long-lived
// connections through proxies, and the cost is the same shared snapshot.
const (
	liveTick = 2 * time.Second
	rollTick = 10 * time.Second
)

// snapshot is what /live.json answers and what the overview page embeds.
type snapshot struct {
	// At is the database time the snapshot describes, in Unix milliseconds.
	At     int64       `json:"at"`
	Queues []liveQueue `json:"queues"`
	// QueuesTotal counts every queue; Queues holds at most queuesShown.
	QueuesTotal int `json:"queues_total"`
	// Next is the name the Queues page's next page starts after; "" on
	// the last page and on the overview.
	Next  string     `json:"next_after,omitempty"`
	Types []liveType `json:"types"`
	// Series holds the charts' counts per type; "" is all types together.
	Series map[string]*typeSeries `json:"series"`
	// HourStart and DayStart are the first bucket of each series (Unix
	// milliseconds); buckets are a minute and an hour.
	HourStart int64 `json:"hour_start"`
	DayStart  int64 `json:"day_start"`
}

type liveQueue struct {
	Queue            string         `json:"queue"`
	Pending          int64          `json:"pending"`
	Processing       int64          `json:"processing"`
	Failed           int64          `json:"failed"`
	OldestPendingAge float64        `json:"oldest_pending_age_s"`
	Paused           bool           `json:"paused"`
	Hour             sluice.Figures `json:"1h"`
	Day              sluice.Figures `json:"24h"`
}

// liveType is one job type's finished work over the last hour and day, as
// sluice.Figures defines it, and the queue latency of the attempts that
// started (nil: none did).
type liveType struct {
	Type        string               `json:"type"`
	Hour        sluice.Figures       `json:"1h"`
	Day         sluice.Figures       `json:"24h"`
	LatencyHour *sluice.LatencyStats `json:"latency_1h"`
	LatencyDay  *sluice.LatencyStats `json:"latency_24h"`
}

type typeSeries struct {
	HourDone   []int64 `json:"hour_done"`
	HourFailed []int64 `json:"hour_failed"`
	DayDone    []int64 `json:"day_done"`
	DayFailed  []int64 `json:"day_failed"`
}

// live caches the snapshot; the mutex also makes concurrent viewers wait
// for one rebuild instead of each running the queries.
type live struct {
	d driver.Driver

	mu      sync.Mutex
	snap    *snapshot
	liveAt  time.Time // when the Stats query last ran (this process's clock)
	rollAt  time.Time // when the roll-ups last were read
	dbNow   time.Time // the database clock at rollAt
	rolls   []sluicetype.StatRow
	latency []sluicetype.LatencyRow
	queries int64 // queries run, for the cost test
}

// invalidate makes the next request rebuild everything, after an action
// that changes what the pages show.
func (l *live) invalidate() {
	l.mu.Lock()
	l.liveAt, l.rollAt = time.Time{}, time.Time{}
	l.mu.Unlock()
}

func (l *live) get(ctx context.Context) (*snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	local := time.Now()
	if l.snap != nil && local.Sub(l.liveAt) < liveTick {
		return l.snap, nil
	}
	if local.Sub(l.rollAt) >= rollTick {
		now, err := l.d.Now(ctx)
		if err != nil {
			return nil, err
		}
		day := now.Truncate(time.Hour).Add(-23 * time.Hour)
		rolls, err := l.d.ReadStats(ctx, driver.ReadStatsParams{Since: day})
		if err != nil {
			return nil, err
		}
		latency, err := l.d.ReadLatency(ctx, driver.ReadStatsParams{Since: day})
		if err != nil {
			return nil, err
		}
		l.queries += 3
		l.rollAt, l.dbNow, l.rolls, l.latency = local, now, rolls, latency
	}
	st, err := l.d.Stats(ctx)
	if err != nil {
		return nil, err
	}
	paused, err := l.d.PausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	l.queries += 2
	l.liveAt = local
	l.snap = build(st, paused, l.rolls, l.latency, l.dbNow.Add(time.Since(l.rollAt)))
	return l.snap, nil
}

func build(st []sluicetype.QueueStats, paused map[string]bool, rolls []sluicetype.StatRow, latency []sluicetype.LatencyRow, now time.Time) *snapshot {
	hourStart := now.Truncate(time.Minute).Add(-59 * time.Minute)
	dayStart := now.Truncate(time.Hour).Add(-23 * time.Hour)
	s := &snapshot{At: now.UnixMilli(), HourStart: hourStart.UnixMilli(), DayStart: dayStart.UnixMilli(),
		Series: map[string]*typeSeries{}}
	queues := map[string]*liveQueue{}
	queue := func(name string) *liveQueue {
		q := queues[name]
		if q == nil {
			q = &liveQueue{Queue: name, Paused: paused[name]}
			queues[name] = q
		}
		return q
	}
	for _, r := range st {
		q := queue(r.Queue)
		q.Pending, q.Processing, q.Failed = r.Pending, r.Processing, r.Failed
		q.OldestPendingAge = r.PendingAge(now).Seconds()
	}
	for name := range paused {
		queue(name)
	}
	types := map[string]*liveType{}
	typ := func(name string) *liveType {
		t := types[name]
		if t == nil {
			t = &liveType{Type: name}
			types[name] = t
		}
		return t
	}
	series := func(t string) *typeSeries {
		ts := s.Series[t]
		if ts == nil {
			ts = &typeSeries{HourDone: make([]int64, 60), HourFailed: make([]int64, 60), DayDone: make([]int64, 24), DayFailed: make([]int64, 24)}
			s.Series[t] = ts
		}
		return ts
	}
	series("")
	for _, r := range rolls {
		// The charts show attempts: done, and failed (for good or retried).
		var one sluice.Figures
		one.Add(r.Outcome, r.Count)
		if one.Attempts() == 0 {
			continue // cancellations ran nothing
		}
		done, failed := one.Done, one.FailedAttempts()
		q := queue(r.Queue)
		t := typ(r.Type)
		q.Day.Add(r.Outcome, r.Count)
		t.Day.Add(r.Outcome, r.Count)
		inHour := !r.Bucket.Before(hourStart)
		if inHour {
			q.Hour.Add(r.Outcome, r.Count)
			t.Hour.Add(r.Outcome, r.Count)
		}
		for _, ts := range []*typeSeries{series(""), series(r.Type)} {
			if i := int(r.Bucket.Sub(dayStart) / time.Hour); i >= 0 && i < 24 {
				ts.DayDone[i] += done
				ts.DayFailed[i] += failed
			}
			if i := int(r.Bucket.Sub(hourStart) / time.Minute); inHour && i < 60 {
				ts.HourDone[i] += done
				ts.HourFailed[i] += failed
			}
		}
	}
	// The same windows as the counts: the hour's minutes and the day's hours.
	for name, h := range sluicetype.LatencyByType(latency, dayStart) {
		typ(name).LatencyDay = sluice.LatencyOf(h)
	}
	for name, h := range sluicetype.LatencyByType(latency, hourStart) {
		typ(name).LatencyHour = sluice.LatencyOf(h)
	}
	s.Queues = make([]liveQueue, 0, len(queues))
	for _, q := range queues {
		s.Queues = append(s.Queues, *q)
	}
	sort.Slice(s.Queues, func(i, j int) bool { return s.Queues[i].Queue < s.Queues[j].Queue })
	s.Types = make([]liveType, 0, len(types))
	for _, t := range types {
		s.Types = append(s.Types, *t)
	}
	sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Type < s.Types[j].Type })
	return s
}

// queuesShown bounds the queues a page (and its live.json) lists: with
// 10,000 queues, listing all made pages of megabytes.
const queuesShown = 100

// busiest is s with its queues cut to the queuesShown with the most live
// jobs, still in name order, for the overview.
func (s *snapshot) busiest() *snapshot {
	c := *s
	c.QueuesTotal = len(s.Queues)
	if len(s.Queues) <= queuesShown {
		return &c
	}
	qs := slices.Clone(s.Queues)
	load := func(q liveQueue) int64 { return q.Pending + q.Processing + q.Failed }
	sort.SliceStable(qs, func(i, j int) bool { return load(qs[i]) > load(qs[j]) })
	qs = qs[:queuesShown]
	sort.Slice(qs, func(i, j int) bool { return qs[i].Queue < qs[j].Queue })
	c.Queues = qs
	return &c
}

// page is s with the queuesShown queues whose names follow after, for the
// Queues page; Next is the last one's name when more follow.
func (s *snapshot) page(after string) *snapshot {
	c := *s
	c.QueuesTotal = len(s.Queues)
	i := sort.Search(len(s.Queues), func(i int) bool { return s.Queues[i].Queue > after })
	end := min(i+queuesShown, len(s.Queues))
	c.Queues = s.Queues[i:end]
	if end < len(s.Queues) {
		c.Next = s.Queues[end-1].Queue
	}
	return &c
}

func (d *Dashboard) liveJSON(w http.ResponseWriter, r *http.Request, _ *view) {
	full, err := d.live.get(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	s := full.busiest()
	if q := r.URL.Query(); q.Has("after") {
		s = full.page(q.Get("after"))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s)
}
