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

// liveQueue is a queue as Stats shows it (its JSON the same as in
// /v1/stats), with its finished work over the last hour and day as
// sluicetype.Figures defines it, which the pages show.
type liveQueue struct {
	sluicetype.QueueStats
	Hour sluicetype.Figures `json:"1h"`
	Day  sluicetype.Figures `json:"24h"`
}

// liveType is one job type's finished work over the last hour and day, as
// sluicetype.Figures defines it, and the queue latency of the attempts that
// started (nil: none did).
type liveType struct {
	Type        string                   `json:"type"`
	Hour        sluicetype.Figures       `json:"1h"`
	Day         sluicetype.Figures       `json:"24h"`
	LatencyHour *sluicetype.LatencyStats `json:"latency_1h"`
	LatencyDay  *sluicetype.LatencyStats `json:"latency_24h"`
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
	c *sluice.Client

	mu      sync.Mutex
	snap    *snapshot
	liveAt  time.Time          // when the live counts were last read (this process's clock)
	rollAt  time.Time          // when the roll-ups were last read
	rolls   sluicetype.Rollups // the roll-ups and the database clock at rollAt
	queries int64              // queries run, for the cost test
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
		rolls, err := l.c.Rollups(ctx)
		if err != nil {
			return nil, err
		}
		l.queries += 3 // the clock and the two roll-up tables
		l.rollAt, l.rolls = local, rolls
	}
	qs, err := l.c.QueueCounts(ctx)
	if err != nil {
		return nil, err
	}
	l.queries += 2 // the live rows and the paused flags
	l.liveAt = local
	l.snap = build(qs, l.rolls, l.rolls.Now.Add(time.Since(l.rollAt)))
	return l.snap, nil
}

// build joins the live counts and the roll-ups as the Client does for
// Stats, over the windows the charts draw: the hour's minutes and the
// day's hours up to now.
func build(counts []sluicetype.QueueStats, rolls sluicetype.Rollups, now time.Time) *snapshot {
	hourStart := now.Truncate(time.Minute).Add(-59 * time.Minute)
	dayStart := now.Truncate(time.Hour).Add(-23 * time.Hour)
	s := &snapshot{At: now.UnixMilli(), HourStart: hourStart.UnixMilli(), DayStart: dayStart.UnixMilli(),
		Series: map[string]*typeSeries{}}
	for _, q := range rolls.Queues(counts, now, hourStart, dayStart) {
		s.Queues = append(s.Queues, liveQueue{q, sluicetype.FiguresOf(q.FinishedHour), sluicetype.FiguresOf(q.FinishedDay)})
	}
	for _, t := range rolls.Types(hourStart, dayStart) {
		s.Types = append(s.Types, liveType{Type: t.Type, Hour: sluicetype.FiguresOf(t.FinishedHour), Day: sluicetype.FiguresOf(t.FinishedDay),
			LatencyHour: t.LatencyHour, LatencyDay: t.LatencyDay})
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
	for _, r := range rolls.Finished {
		// The charts show attempts: done, and failed (for good or retried).
		var one sluicetype.Figures
		one.Add(r.Outcome, r.Count)
		if one.Attempts() == 0 {
			continue // cancellations ran nothing
		}
		for _, ts := range []*typeSeries{series(""), series(r.Type)} {
			if i := int(r.Bucket.Sub(dayStart) / time.Hour); i >= 0 && i < 24 {
				ts.DayDone[i] += one.Done
				ts.DayFailed[i] += one.FailedAttempts()
			}
			if i := int(r.Bucket.Sub(hourStart) / time.Minute); i >= 0 && i < 60 {
				ts.HourDone[i] += one.Done
				ts.HourFailed[i] += one.FailedAttempts()
			}
		}
	}
	if s.Queues == nil {
		s.Queues = []liveQueue{}
	}
	if s.Types == nil {
		s.Types = []liveType{}
	}
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

// snapshot is the shared snapshot of every queue, or false when reading it
// failed and the error was answered.
func (d *Dashboard) snapshot(w http.ResponseWriter, r *http.Request) (*snapshot, bool) {
	full, err := d.live.get(r.Context())
	if err != nil {
		d.fail(w, err)
		return nil, false
	}
	return full, true
}

func (d *Dashboard) liveJSON(w http.ResponseWriter, r *http.Request, _ *view) {
	full, ok := d.snapshot(w, r)
	if !ok {
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
