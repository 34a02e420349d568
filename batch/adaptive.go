package batch

import "time"

// adaptive sizes chunks so that each takes about target: after every full
// chunk it measures rows per second and moves the size halfway toward the
// size that rate would fill target with. Moving halfway damps the noise of
// one slow or fast chunk, and the size at most doubles or halves per chunk
// so that a cold cache on the first chunk cannot swing it to an extreme.
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
	next := (float64(a.size) + ideal) / 2
	next = max(float64(a.size)/2, min(float64(a.size)*2, next))
	a.size = max(a.min, min(a.max, int(next+0.5)))
	return a.size
}
