package worker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// At shutdown, a job whose handler has returned but whose outcome is still
// being written is not "stuck": the requeue of handlers that ignored
// cancellation leaves it alone, so its success is written and it does not
// run a second time. Before the fix the requeue took every registered job
// and won the fenced race against the slow success write.
func TestShutdownRequeueSparesReturnedHandlers(t *testing.T) {
	d := openSQLite(t)
	ids := enqueue(t, d, 2)
	done, stuck := ids[0], ids[1]

	release := make(chan struct{})
	d.beforeComplete = func(call int, cs []driver.Completion) {
		if call == 1 {
			<-release // the success write of done is slow
		}
	}
	ignore := make(chan struct{}) // the stuck handler ignores its context
	t.Cleanup(func() { close(ignore) })
	run := func(ctx context.Context, j sluicetype.JobRow) Result {
		if j.ID == stuck {
			<-ignore
		}
		return Result{Status: sluicetype.StatusSuccess}
	}
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 2}, run, Hooks{},
		func(p *Pool) { p.cfg.Grace = 20 * time.Millisecond })
	eventually(t, 2*time.Second, func() bool {
		return len(d.completeCalls()) == 1 && job(t, d, stuck).Status == sluicetype.StatusProcessing
	}, "want done's outcome being written and stuck running")

	stopped := make(chan struct{})
	go func() { p.stop(10 * time.Millisecond); close(stopped) }()
	eventually(t, 2*time.Second, func() bool { return job(t, d, stuck).Status == sluicetype.StatusPending },
		"the stuck job was not requeued")
	close(release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}

	calls := d.completeCalls()
	require.Len(t, calls, 2)
	require.False(t, slices.ContainsFunc(calls[1], func(c driver.Completion) bool { return c.ID == done }),
		"the requeue took a job whose handler had returned")
	j := job(t, d, done)
	require.Equal(t, sluicetype.StatusSuccess, j.Status)
	require.Equal(t, 1, j.Attempts)
	require.Zero(t, job(t, d, stuck).Attempts, "the stuck job's attempt was charged")
}
