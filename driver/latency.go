package driver

import (
	"math/bits"
	"time"
)

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

// QueueLatency is how long a job that a claim returned waited between
// becoming runnable (next_run_at) and its claim, when it left the queue.
// Every claim writes updated_at from the database clock, so both ends are
// database time whatever the worker's clock says. A job a worker claimed
// ahead (prefetched) may then wait for a free handler slot: that is the
// worker's saturation, not the queue's, and is not counted here.
func (j *JobRow) QueueLatency() time.Duration { return max(j.UpdatedAt.Sub(j.NextRunAt), 0) }

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
