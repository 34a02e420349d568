package sluicetype

import (
	"math/bits"
	"time"
)

// QueueStats is the live picture of one queue. Driver.Stats fills the
// live counts (Queue, Pending, Processing, Failed, OldestPending); the
// Client adds the rest: the paused flag, the finished attempts from the
// roll-ups, the settings and the top partitions.
type QueueStats struct {
	Queue      string `json:"queue"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Failed     int64  `json:"failed"`
	// OldestPending is the next_run_at of the oldest runnable pending
	// job, nil when there is none; OldestPendingAge is how long it has
	// waited, in seconds, at the database time the Client read.
	OldestPending    *time.Time `json:"-"`
	OldestPendingAge float64    `json:"oldest_pending_age_s"`
	Paused           bool       `json:"paused"`
	// Finished attempts by outcome (success, retry, failed, cancelled) in
	// the last hour and day, from the sluice_stats roll-ups.
	FinishedHour map[string]int64 `json:"finished_1h"`
	FinishedDay  map[string]int64 `json:"finished_24h"`
	// Fair and MaxRunning are the queue's settings in the reading
	// client's config (false and 0 when it has none for the queue).
	Fair       bool `json:"fair,omitempty"`
	MaxRunning int  `json:"max_running,omitempty"`
	// Partitions are the partitions with the largest backlog, with their
	// running jobs against their cap.
	Partitions []PartitionStats `json:"partitions,omitempty"`
}

// PendingAge is how long the oldest runnable pending job has waited at
// now: zero when there is none, or when now (read from another clock than
// next_run_at, perhaps) is not past it.
func (s *QueueStats) PendingAge(now time.Time) time.Duration {
	if s.OldestPending == nil || !s.OldestPending.Before(now) {
		return 0
	}
	return now.Sub(*s.OldestPending)
}

// PartitionStats is the live picture of one partition of a queue.
type PartitionStats struct {
	// Queue is the partition's queue; the JSON nests partitions under
	// their queue, so it leaves it out.
	Queue     string `json:"-"`
	Partition string `json:"partition"`
	Pending   int64  `json:"pending"`
	Running   int64  `json:"running"`
	// MaxRunning is the partition's running cap in the reading client's
	// config, 0 for none.
	MaxRunning int `json:"max_running,omitempty"`
}

// StatRow is one roll-up bucket: Count jobs of Type in Queue finished with
// Outcome during the minute (or, once compacted, the hour) starting at Bucket.
type StatRow struct {
	Queue   string
	Type    string
	Outcome Outcome
	Bucket  time.Time
	Count   int64
}

// LatencyRow is one slot of one roll-up bucket: Count attempts of Type in
// Queue, counted during the minute (or, once compacted, the hour) starting
// at Bucket, waited a time in slot Slot (see LatencySlots) between
// becoming runnable and starting.
type LatencyRow struct {
	Queue  string
	Type   string
	Bucket time.Time
	Slot   int
	Count  int64
}

// LatencySlots is the number of slots of the queue-latency histogram that
// sluice_stats_latency keeps per queue, type and minute. Slot 0 counts
// waits under 1 ms; slot i (1 to LatencySlots-2) counts waits in
// [2^(i-1) ms, 2^i ms); the last slot counts waits of 2^23 ms (2h19m49s)
// and more. The table stores slot numbers, so these bounds are part of
// the schema: changing them would misread every stored row.
const LatencySlots = 25

// LatencySlot is the slot of a wait; negative waits (a clock step) count
// as none.
func LatencySlot(wait time.Duration) int {
	if wait < time.Millisecond {
		return 0
	}
	return min(bits.Len64(uint64(wait/time.Millisecond)), LatencySlots-1)
}

// LatencyBounds are the lower and upper bounds of slot i; the last slot's
// upper bound is 0 (none).
func LatencyBounds(i int) (lo, hi time.Duration) {
	if i > 0 {
		lo = time.Millisecond << (i - 1)
	}
	if i < LatencySlots-1 {
		hi = time.Millisecond << i
	}
	return lo, hi
}

// Latency is a queue-latency histogram: counts per slot.
type Latency [LatencySlots]int64

// Count is the number of waits counted.
func (h *Latency) Count() int64 {
	n := int64(0)
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile estimates the q-quantile (0 < q <= 1) of the waits counted,
// interpolated linearly within the slot that holds it, as Prometheus's
// histogram_quantile does; false when nothing was counted. The true
// quantile lies in the same slot, so below 1 ms the estimate is off by
// under 1 ms and above it by under a factor of 2 either way (a slot's
// upper bound is twice its lower). In the last, open slot the estimate is
// its lower bound: the wait was at least that.
func (h *Latency) Quantile(q float64) (time.Duration, bool) {
	total := h.Count()
	if total == 0 {
		return 0, false
	}
	rank := min(max(q, 0), 1) * float64(total)
	var below int64
	for i, c := range h {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		lo, hi := LatencyBounds(i)
		if hi == 0 {
			return lo, true
		}
		frac := (rank - float64(below)) / float64(c)
		return lo + time.Duration(frac*float64(hi-lo)), true
	}
	return 0, false // not reached: the last counted slot holds rank <= total
}

// LatencyByType sums the rows of buckets at or after since into one
// histogram per type, over every queue.
func LatencyByType(rows []LatencyRow, since time.Time) map[string]*Latency {
	out := map[string]*Latency{}
	for _, r := range rows {
		if r.Bucket.Before(since) || r.Slot < 0 || r.Slot >= LatencySlots {
			continue
		}
		h := out[r.Type]
		if h == nil {
			h = &Latency{}
			out[r.Type] = h
		}
		h[r.Slot] += r.Count
	}
	return out
}

// RescueResult counts the jobs a rescue of expired leases moved, by their
// new state.
type RescueResult struct {
	Pending int
	Failed  int
	// FailedBy counts the failed ones by queue and type; nil when none.
	// Those jobs finished for good, so they count as failed completions.
	FailedBy map[QueueType]int
}

// QueueType names a queue and a job type.
type QueueType struct{ Queue, Type string }

// Add adds o's counts to r.
func (r *RescueResult) Add(o RescueResult) {
	r.Pending += o.Pending
	r.Failed += o.Failed
	for k, n := range o.FailedBy {
		r.failedBy(k, n)
	}
}

// failedBy counts n failed jobs of k.
func (r *RescueResult) failedBy(k QueueType, n int) {
	if r.FailedBy == nil {
		r.FailedBy = map[QueueType]int{}
	}
	r.FailedBy[k] += n
}

// CountRescued counts one rescued job from its new status, queue and type.
func (r *RescueResult) CountRescued(status Status, queue, typ string) {
	if status != StatusFailed {
		r.Pending++
		return
	}
	r.Failed++
	r.failedBy(QueueType{queue, typ}, 1)
}

// TypeCount is how many pending jobs of Type wait: for the types that no
// process with a handler for them has served lately (Client.WaitingForHandler).
type TypeCount struct {
	Type    string `json:"type"`
	Pending int64  `json:"pending"`
}

// QueueCount is how many pending jobs wait in Queue: for the queues that
// no process has claimed from lately (Client.UnservedQueues).
type QueueCount struct {
	Queue   string `json:"queue"`
	Pending int64  `json:"pending"`
}
