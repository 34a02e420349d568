package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// fastRetry retries a failed job within milliseconds, so that tests of
// retries finish quickly.
var fastRetry = sluice.Backoff{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}

// startClient runs a client with one queue and the given types until the test ends.
func startClient(t *testing.T, d driver.Driver, conc int, types map[string]sluice.Type) *sluice.Client {
	t.Helper()
	return clienttest.Start(t, sluice.Config{Driver: d, Types: types,
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: conc}}, RescueEvery: 200 * time.Millisecond, PollMax: 50 * time.Millisecond})
}

// waitStatus polls until the job reaches status or the deadline passes.
func waitStatus(t *testing.T, d driver.Driver, id int64, status sluicetype.Status) *sluicetype.JobRow {
	t.Helper()
	// A wait for a state: CI under load has taken more than 15 s.
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, err := d.GetJob(context.Background(), id)
		require.NoError(t, err)
		if j.Status == status {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: status %s (attempts %d, last_error %q), want %s", id, j.Status, j.Attempts, j.LastError, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClientOutcomes(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var flaky, snoozes atomic.Int32
		c := startClient(t, d, 4, map[string]sluice.Type{
			"ok": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				j.SetResult("done " + j.IdempotencyKey())
				return nil
			})},
			"flaky": {Backoff: fastRetry, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				if flaky.Add(1) < 3 {
					return errors.New("temporary")
				}
				return nil
			})},
			"bad": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				return sluice.Permanent(errors.New("invalid order"))
			})},
			"exhaust": {Backoff: fastRetry, MaxAttempts: 2, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				return errors.New("always")
			})},
			"panics": {Backoff: fastRetry, MaxAttempts: 1, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				panic("boom")
			})},
			"slow": {Timeout: 100 * time.Millisecond, MaxAttempts: 1, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				<-ctx.Done()
				return ctx.Err()
			})},
			"snooze": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				if snoozes.Add(1) == 1 {
					return sluice.Snooze(10 * time.Millisecond)
				}
				return nil
			})},
		})
		enq := func(typ, key string) int64 {
			r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: typ, Key: key})
			require.NoError(t, err)
			return r.ID
		}
		j := waitStatus(t, d, enq("ok", "order-1"), sluicetype.StatusSuccess)
		require.Equal(t, fmt.Sprintf("done job-%d-%d", j.ID, j.CreatedAt.UnixMicro()), j.Result,
			"the idempotency key names the job and its creation time, not the business key")
		require.NotNil(t, j.FinishedAt)

		j = waitStatus(t, d, enq("flaky", ""), sluicetype.StatusSuccess)
		require.Equal(t, 3, j.Attempts)
		require.Equal(t, "temporary", j.LastError)

		j = waitStatus(t, d, enq("bad", ""), sluicetype.StatusFailed)
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, "invalid order", j.LastError)

		j = waitStatus(t, d, enq("exhaust", ""), sluicetype.StatusFailed)
		require.Equal(t, 2, j.Attempts)

		j = waitStatus(t, d, enq("panics", ""), sluicetype.StatusFailed)
		require.Contains(t, j.LastError, "panic: boom")
		require.Contains(t, j.LastError, "goroutine")

		j = waitStatus(t, d, enq("slow", ""), sluicetype.StatusFailed)
		require.Contains(t, j.LastError, "timed out after 100ms")

		// A snooze gives the attempt back: two runs, one attempt counted.
		j = waitStatus(t, d, enq("snooze", ""), sluicetype.StatusSuccess)
		require.Equal(t, 1, j.Attempts)
	})
}

func TestEnqueueDedupe(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		a, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "sync", Key: "order-7", Payload: map[string]int{"n": 1}})
		require.NoError(t, err)
		require.False(t, a.Duplicate)
		b, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "sync", Key: "order-7"})
		require.NoError(t, err)
		require.Equal(t, sluice.EnqueueResult{ID: a.ID, Duplicate: true}, b)

		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "sync", Payload: []byte("{not json")})
		var ie *sluice.InputError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "payload", ie.Field)
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: strings.Repeat("x", 65)})
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "type", ie.Field)
		_, err = c.EnqueueMany(ctx, []sluice.EnqueueParams{{Type: "ok"}, {Type: "ok", Key: strings.Repeat("k", 192)}})
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "key", ie.Field)
		for _, bad := range []string{strings.Repeat("p", 65), "tenant 7", "t'1", "ten\x00ant", "é"} {
			_, err = c.EnqueueMany(ctx, []sluice.EnqueueParams{{Type: "ok"}, {Type: "ok", Partition: bad}})
			require.ErrorAs(t, err, &ie, "partition %q", bad)
			require.Equal(t, "partition", ie.Field)
		}
		jobs, err := d.ListJobs(ctx, sluicetype.ListParams{})
		require.NoError(t, err)
		require.Len(t, jobs, 1, "bad input must write nothing")
	})
}

func TestTransactionalCompletion(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		_, err := d.DB().ExecContext(ctx, "CREATE TABLE "+tableName(t)+" (id INT PRIMARY KEY)")
		require.NoError(t, err)
		t.Cleanup(func() { d.DB().ExecContext(context.Background(), "DROP TABLE "+tableName(t)) })
		var runs atomic.Int32
		c := startClient(t, d, 1, map[string]sluice.Type{
			"write": {Backoff: sluice.Backoff{Base: 10 * time.Millisecond}, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				tx, err := j.Tx(ctx)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO "+tableName(t)+" (id) VALUES (1)"); err != nil {
					return err
				}
				if runs.Add(1) == 1 {
					return errors.New("fail after writing: the write must roll back")
				}
				return nil
			})},
		})
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "write"})
		require.NoError(t, err)
		j := waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		require.Equal(t, 2, j.Attempts)
		var n int
		require.NoError(t, d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tableName(t)).Scan(&n))
		require.Equal(t, 1, n, "the failed attempt's write was rolled back, the successful one committed")
	})
}

func tableName(t *testing.T) string {
	return "effects_" + strings.NewReplacer("/", "_", "-", "_").Replace(strings.ToLower(t.Name()))
}

func TestShutdownRequeuesWithoutCharge(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		started := make(chan struct{}, 1)
		c, err := sluice.NewClient(sluice.Config{Driver: d, Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}},
			Types: map[string]sluice.Type{"long": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			})}}})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "long"})
		require.NoError(t, err)
		<-started
		stopCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		c.Stop(stopCtx)
		j, err := d.GetJob(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Attempts, "an attempt interrupted by shutdown is not charged")
		require.Empty(t, j.LockedBy)
		require.Contains(t, j.LastError, "shutdown")
	})
}

func TestQueueRateLimit(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	var done atomic.Int32
	c, err := sluice.NewClient(sluice.Config{Driver: d, PollMax: 20 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 10, Rate: 20}},
		Types: map[string]sluice.Type{"t": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
			done.Add(1)
			return nil
		})}}})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, 30)
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: "t"}
	}
	_, err = c.EnqueueMany(ctx, ps)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, c.Start(ctx))
	defer c.Stop(ctx)
	require.Eventually(t, func() bool { return done.Load() == 30 }, time.Minute, 5*time.Millisecond)
	// A burst of 20, then 10 more at 20/s: at least half a second.
	require.GreaterOrEqual(t, time.Since(start), 450*time.Millisecond)
}

// A Retry-After from the handler replaces the backoff, but never beyond the
// type's backoff.max: a receiver asking for an hour waits only as long as
// the type allows.
func TestRetryAfterCappedAtBackoffMax(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{
			"later": {Backoff: sluice.Backoff{Base: time.Millisecond, Max: 2 * time.Second},
				Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
					return sluice.RetryAfter(errors.New("busy"), time.Hour)
				})},
		}})
		require.NoError(t, err)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "later"})
		require.NoError(t, err)
		res, err := c.RunOnce(ctx, sluice.RunParams{Type: "later"})
		require.NoError(t, err)
		require.Equal(t, 1, res.Retried)
		now, err := d.Now(ctx)
		require.NoError(t, err)
		j, err := d.GetJob(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		wait := j.NextRunAt.Sub(now)
		require.LessOrEqual(t, wait, 2*time.Second, "capped at backoff.max, not the hour asked for")
		require.Greater(t, wait, time.Second, "the Retry-After still replaces the 1 ms backoff")
	})
}

func TestClusterRatesRejected(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		h := sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })
		for _, c := range []struct {
			cfg   sluice.Config
			field string
		}{
			{sluice.Config{Types: map[string]sluice.Type{"x": {Handler: h, ClusterRate: -1}}}, "cluster_rate"},
			{sluice.Config{Types: map[string]sluice.Type{"x": {Handler: h, ClusterRate: math.NaN()}}}, "cluster_rate"},
			{sluice.Config{Types: map[string]sluice.Type{"x": {Handler: h, ClusterBurst: 3}}}, "cluster_burst"},
			{sluice.Config{Queues: map[string]sluice.QueueConfig{"q": {ClusterRatePerPartition: 5}}}, "cluster_rate_per_partition"},
			{sluice.Config{Queues: map[string]sluice.QueueConfig{"q": {Fair: true, ClusterRatePerPartition: math.Inf(1)}}}, "cluster_rate_per_partition"},
			{sluice.Config{Queues: map[string]sluice.QueueConfig{"q": {Fair: true, PartitionClusterRate: map[string]float64{"a": 0}}}}, "partition_cluster_rate"},
			{sluice.Config{Queues: map[string]sluice.QueueConfig{"q": {Fair: true, ClusterBurstPerPartition: 2}}}, "cluster_burst_per_partition"},
		} {
			c.cfg.Driver = d
			_, err := sluice.NewClient(c.cfg)
			var ie *sluice.InputError
			require.ErrorAs(t, err, &ie, "%+v", c.cfg)
			require.Equal(t, c.field, ie.Field, "%v", err)
		}
	})
}
