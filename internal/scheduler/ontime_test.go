package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// clockDriver is a real database whose clock the test sets: the scheduler
// reads time only through Driver.Now.
type clockDriver struct {
	driver.Driver
	mu  sync.Mutex
	now time.Time
}

func (c *clockDriver) Now(context.Context) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now, nil
}

func (c *clockDriver) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Each kind of expression fires its slot in the pass at the slot's
// instant, and the pass asks to wake at the next slot, not later: an
// @every series counts from its previous slot, so it must not be computed
// from the late-slot window's start (which made every slot 5 s late).
func TestSlotsFireOnTime(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ expr string }{{"@every 10s"}, {"*/10 * * * * *"}, {"@every 1m"}} {
		t.Run(tc.expr, func(t *testing.T) {
			spec, err := cron.Parse(tc.expr, nil)
			require.NoError(t, err)
			d := &clockDriver{Driver: testdb.Open(t, "sqlite"), now: start}
			e := Entry{Name: "tick", Spec: spec, Overlap: OverlapAllow}
			var keys []string
			s := New(Config{Driver: d, Entries: []Entry{e}, Enqueue: func(ctx context.Context, _ Entry, key string) (int64, bool, error) {
				keys = append(keys, key)
				return insert(ctx, d.Driver, key)
			}})
			ctx := context.Background()
			next, err := s.Pass(ctx) // creates the schedule at start
			require.NoError(t, err)
			period := spec.Next(start).At.Sub(start)
			require.Equal(t, period, next)

			at := start
			for i := 1; i <= 3; i++ {
				slot := at.Add(period)
				d.set(slot.Add(-time.Millisecond))
				next, err = s.Pass(ctx)
				require.NoError(t, err)
				require.Len(t, keys, i-1, "slot %d fired early", i)
				require.Equal(t, time.Millisecond, next, "the pass before slot %d wakes at it", i)

				d.set(slot)
				next, err = s.Pass(ctx)
				require.NoError(t, err)
				require.Len(t, keys, i, "slot %d fires at its instant (%s)", i, slot)
				require.Equal(t, "sched:tick:"+slot.Format("2006-01-02T15:04:05")+keySuffix(tc.expr), keys[i-1])
				require.Equal(t, period, next, "after slot %d the next is one period away", i)

				// Part way through the period the wait is what is left of it.
				d.set(slot.Add(period / 2))
				next, err = s.Pass(ctx)
				require.NoError(t, err)
				require.Equal(t, period-period/2, next)
				at = slot
			}
		})
	}
}

// keySuffix is the zone mark of a slot key: @every slots are instants.
func keySuffix(expr string) string {
	if expr[0] == '@' {
		return "Z"
	}
	return ""
}
