package clock

import (
	"sync"
	"time"
)

// Manual is a clock that stands still until Advance, for the engine's
// unit tests: they move time themselves instead of sleeping through it.
type Manual struct {
	mu sync.Mutex
	t  time.Time
}

// NewManual returns a manual clock that reads start.
func NewManual(start time.Time) *Manual { return &Manual{t: start} }

// Now reads the manual clock.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

// Advance moves the manual clock d forward.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

// Clock is the manual clock as the Clock the engine takes.
func (m *Manual) Clock() Clock { return m.Now }
