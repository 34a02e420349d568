package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// progressDriver counts the progress writes that reach the database.
type progressDriver struct {
	*countingDriver
	mu     sync.Mutex
	writes []driver.ProgressParams
}

func (d *progressDriver) Progress(ctx context.Context, p driver.ProgressParams) (bool, error) {
	held, err := d.countingDriver.Progress(ctx, p)
	d.mu.Lock()
	d.writes = append(d.writes, p)
	d.mu.Unlock()
	return held, err
}

func (d *progressDriver) written() []driver.ProgressParams {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]driver.ProgressParams(nil), d.writes...)
}

// A handler reporting on every one of 1000 items in a burst costs one
// write at once and one per ProgressEvery of the pool's clock after it,
// the latest report each time; the last report lands on the row and on
// the attempt's history entry when the handler returns.
func TestProgressWritesAreCoalesced(t *testing.T) {
	d := &progressDriver{countingDriver: openSQLite(t)}
	clk := newManualClock()
	id := enqueue(t, d, 1)[0]
	burst, more, burst2, finish := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		report := Report(ctx)
		for i := range 1000 {
			report(int64(i+1), 2000, fmt.Sprintf("item %d", i+1))
		}
		close(burst)
		<-more
		for i := 1000; i < 2000; i++ {
			report(int64(i+1), 2000, fmt.Sprintf("item %d", i+1))
		}
		close(burst2)
		<-finish
		msg := "try again"
		return Result{Status: sluicetype.StatusPending, Delay: time.Hour, Error: &msg}
	}
	startPool(t, d, clk.Clock(), Queue{Concurrency: 1}, run, Hooks{})

	<-burst
	eventually(t, time.Second, func() bool { return len(d.written()) >= 1 }, "the first report was never written")
	// The pool's clock has not moved: whatever the burst left pending
	// waits for it, however long the handler runs.
	require.Len(t, d.written(), 1, "a burst of reports was written more than once within a second")

	close(more)
	<-burst2
	require.Len(t, d.written(), 1, "a second burst was written within the same second")
	clk.Advance(ProgressEvery)
	// Judged on the recorded write, not on the row alone: the row shows
	// the write before progressDriver has recorded it.
	eventually(t, time.Second, func() bool {
		p := job(t, d, id).Progress
		return p != nil && p.Done == 2000 && len(d.written()) >= 2
	}, "the latest report was not written once the second passed")
	require.Len(t, d.written(), 2, "2000 reports over one second of the pool's clock")

	close(finish)
	eventually(t, time.Second, func() bool { return job(t, d, id).Status == sluicetype.StatusPending }, "the attempt's outcome was not written")
	j := job(t, d, id)
	require.Equal(t, int64(2000), j.Progress.Done, "the job keeps its last attempt's progress")
	require.Len(t, j.History, 1)
	require.Equal(t, &sluicetype.Progress{Done: 2000, Total: 2000, Message: "item 2000"}, j.History[0].Progress)
	require.Len(t, d.written(), 2, "a report already written was written again at return")
}

// The last report of a handler that returns before its second is up is
// written when it returns: what the job shows is what the handler last
// said.
func TestProgressLastReportLandsAtReturn(t *testing.T) {
	d := &progressDriver{countingDriver: openSQLite(t)}
	id := enqueue(t, d, 1)[0]
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		report := Report(ctx)
		for i := range 1000 {
			report(int64(i+1), 1000, "working")
		}
		return Result{Status: sluicetype.StatusSuccess}
	}
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1}, run, Hooks{})
	eventually(t, time.Second, func() bool { return job(t, d, id).Status == sluicetype.StatusSuccess }, "the job did not succeed")
	p := job(t, d, id).Progress
	require.NotNil(t, p)
	require.Equal(t, [2]int64{1000, 1000}, [2]int64{p.Done, p.Total})
	require.LessOrEqual(t, len(d.written()), 2, "a burst before the handler returned")
}
