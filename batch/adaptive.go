package batch

import "time"

// adaptive sizes chunks so that each takes about target, in the manner of
// congestion control: a chunk over the target cuts the size multiplicatively
// (to what the measured rate fits in the target, at least halving at most),
// and a chunk under it grows the size additively, by half the distance to
// that size but never more than doubling. Cutting at once keeps a slow
// database from being hit by more oversized chunks; growing by steps keeps
// one fast chunk (a warm cache) from swinging the size to an extreme.
type adaptive struct {
	target   time.Duration
	min, max int
	size     int
}

func newAdaptive(target time.Duration, lo, hi, start int) *adaptive {
	return &adaptive{target: target, min: lo, max: hi, size: max(lo, min(hi, start))}
}

// observe records a chunk of rows that took d and returns the next size.
func (a *adaptive) observe(rows int, d time.Duration) int {
	if rows <= 0 || d <= 0 {
		return a.size
	}
	ideal := float64(rows) * float64(a.target) / float64(d)
	size := float64(a.size)
	var next float64
	if d > a.target {
		next = max(size/2, ideal)
	} else {
		next = size + min(size, max(0, ideal-size)/2)
	}
	a.size = max(a.min, min(a.max, int(next+0.5)))
	return a.size
}
