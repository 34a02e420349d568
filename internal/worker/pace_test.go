package worker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// claimCounter counts claims and hides the driver's probe: the producer
// must find the rate's next token by its own pace, not because a probe
// saw a runnable job (PostgreSQL, which pushes wake-ups, has no probe).
type claimCounter struct {
	driver.Driver
	claims, claimed atomic.Int64
}

func (d *claimCounter) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	jobs, err := d.Driver.Claim(ctx, p)
	d.claims.Add(1)
	d.claimed.Add(int64(len(jobs)))
	return jobs, err
}

// TestPacedProducerClaimsEveryHalfToken is the rule that makes a process
// use a start rate rather than only respect it (the property the rate
// tests of the root and systemtest/fault no longer judge by wall clock):
// while the queue started a job within the last second, a claim that came
// back short of the rate's tokens is followed by another within Pace/2,
// never by the doubling back-off of an empty queue, which would let the
// bucket sit full and lose its refill. The rate here gives one token and
// then none for 1000 s, the poll's back-off would reach an hour, and the
// producer's clock stands still, so the last start stays within the
// second however slowly the machine runs: only the pace can produce the
// claims the test waits for. Without the rule the 40th claim comes after
// 2^40 ms of back-off.
func TestPacedProducerClaimsEveryHalfToken(t *testing.T) {
	d := &claimCounter{Driver: testdb.Open(t, "sqlite")}
	enqueue(t, d.Driver, 3)
	var started atomic.Int64
	p := New(Config{
		Driver: d, Clock: newManualClock().Clock(),
		Queues: []Queue{{Name: "q", Concurrency: 4, Lease: time.Minute, Pace: 40 * time.Millisecond,
			Limits: &driver.RunningCaps{TypeRates: map[string]driver.Rate{"t": {PerSecond: 0.001, Burst: 1}}}}},
		LeaseFor: func(string) time.Duration { return time.Minute },
		Run: func(context.Context, sluicetype.JobRow) Result {
			started.Add(1)
			return Result{Status: sluicetype.StatusSuccess}
		},
		Logger:  slog.New(slog.DiscardHandler),
		PollMin: time.Millisecond, PollMax: time.Hour,
	})
	p.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	testdb.WaitFor(t, time.Minute, "40 claims after the one token was spent", func() bool { return d.claims.Load() >= 41 })
	require.EqualValues(t, 1, d.claimed.Load(), "the bucket gave one token: one job claimed")
	require.EqualValues(t, 1, started.Load())
}
