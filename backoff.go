package sluice

import (
	"math/rand/v2"
	"time"
)

// Backoff is the retry delay policy of a job type.
type Backoff struct {
	Base time.Duration // delay after the first failed attempt; default DefaultBackoffBase
	Max  time.Duration // cap; default DefaultBackoffMax
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	return b
}

// Delay is min(Max, Base*2^(attempt-1)), drawn uniformly from its upper
// half so that jobs that failed together do not retry together.
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.withDefaults()
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + rand.N(d-half+1)
}
