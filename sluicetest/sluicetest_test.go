package sluicetest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetest"
	"github.com/sluicehq/sluice/sluicetype"
)

// recorder is a testing.TB whose Fatalf records the failure and ends the
// helper's goroutine, so that a test can check that a helper fails.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a recorder and returns its failure, "" if none.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(r)
	}()
	wg.Wait()
	return r.failure
}

func newClient(t *testing.T, d driver.Driver, types map[string]sluice.Type) *sluice.Client {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
	require.NoError(t, err)
	return c
}

func TestRequireEnqueued(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c := newClient(t, d, nil)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Key: "welcome:1", Queue: "q1", Partition: "tenant-1",
			Payload: map[string]any{"to": "ada@example.com", "n": 1}})
		require.NoError(t, err)
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "other", Key: "welcome:2"})
		require.NoError(t, err)

		// Every field matches, and the payload compares as JSON, not as bytes.
		job := sluicetest.RequireEnqueued(ctx, t, c, "mail", &sluicetest.Opts{Key: "welcome:1", Queue: "q1", Partition: "tenant-1",
			Status: sluicetype.StatusPending, Payload: map[string]any{"n": 1, "to": "ada@example.com"}})
		require.Equal(t, r.ID, job.ID)
		require.Equal(t, r.ID, sluicetest.RequireEnqueued(ctx, t, c, "mail", nil).ID)
		sluicetest.RequireNotEnqueued(ctx, t, c, "mail", &sluicetest.Opts{Key: "welcome:2"})
		sluicetest.RequireNotEnqueued(ctx, t, c, "absent", nil)

		for name, opts := range map[string]*sluicetest.Opts{
			"key":       {Key: "welcome:9"},
			"queue":     {Queue: "q2"},
			"partition": {Partition: "tenant-2"},
			"status":    {Status: sluicetype.StatusSuccess},
			"payload":   {Payload: map[string]any{"to": "ada@example.com", "n": 2}},
		} {
			msg := failure(t, func(tb testing.TB) { sluicetest.RequireEnqueued(ctx, tb, c, "mail", opts) })
			require.Contains(t, msg, `no job of type "mail" matches`, name)
			require.Contains(t, msg, fmt.Sprintf("#%d key=%q", r.ID, "welcome:1"), "%s: the failure shows the jobs it saw", name)
		}
		msg := failure(t, func(tb testing.TB) { sluicetest.RequireEnqueued(ctx, tb, c, "absent", nil) })
		require.Contains(t, msg, "there are no jobs of that type")
		msg = failure(t, func(tb testing.TB) {
			sluicetest.RequireNotEnqueued(ctx, tb, c, "mail", &sluicetest.Opts{Key: "welcome:1"})
		})
		require.Contains(t, msg, `want no job of type "mail" matching key="welcome:1"`)
	})
}

func TestRequireEnqueuedInTransaction(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c := newClient(t, d, nil)
		tx, err := d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		_, err = c.EnqueueTx(ctx, tx, sluice.EnqueueParams{Type: "mail", Key: "order:7"})
		require.NoError(t, err)

		sluicetest.RequireEnqueued(ctx, t, c, "mail", &sluicetest.Opts{Key: "order:7", Tx: tx})
		// Outside the transaction the job does not exist yet.
		sluicetest.RequireNotEnqueued(ctx, t, c, "mail", nil)
		require.NoError(t, tx.Rollback())
		sluicetest.RequireNotEnqueued(ctx, t, c, "mail", nil)
	})
}

type receiptArgs struct {
	Order int `json:"order"`
}

func (receiptArgs) Kind() string { return "receipt" }

func TestRequireEnqueuedArgs(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c := newClient(t, d, nil)
		_, err := c.EnqueueArgs(ctx, receiptArgs{Order: 7}, sluice.EnqueueParams{Key: "receipt:7"})
		require.NoError(t, err)
		got := sluicetest.RequireEnqueuedArgs[receiptArgs](ctx, t, c, &sluicetest.Opts{Key: "receipt:7"})
		require.Equal(t, receiptArgs{Order: 7}, got)
	})
}

func TestWork(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var mu sync.Mutex
		sent := map[string]int{}
		c := newClient(t, d, map[string]sluice.Type{
			"mail": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				mu.Lock()
				defer mu.Unlock()
				sent[job.Key]++
				job.SetResult("sent")
				return nil
			})},
			"flaky": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
				return errors.New("smtp down")
			})},
			"other": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
				t.Error("Work ran a job of another type")
				return nil
			})},
		})
		for _, p := range []sluice.EnqueueParams{
			{Type: "mail", Key: "a1", Queue: "a"}, {Type: "mail", Key: "a2", Queue: "a"}, {Type: "mail", Key: "b1", Queue: "b"},
			{Type: "mail", Key: "later", Delay: time.Hour}, {Type: "other", Key: "o"}, {Type: "flaky", Key: "f"},
		} {
			_, err := c.Enqueue(ctx, p)
			require.NoError(t, err)
		}

		res := sluicetest.Work(ctx, t, c, "mail")
		require.Equal(t, sluice.RunResult{OK: true, Done: 3}, res)
		require.Equal(t, map[string]int{"a1": 1, "a2": 1, "b1": 1}, sent)
		done := sluicetest.RequireEnqueued(ctx, t, c, "mail", &sluicetest.Opts{Key: "b1", Status: sluicetype.StatusSuccess})
		require.Equal(t, "sent", done.Result, "the job was completed through the real path")
		sluicetest.RequireEnqueued(ctx, t, c, "mail", &sluicetest.Opts{Key: "later", Status: sluicetype.StatusPending})
		sluicetest.RequireEnqueued(ctx, t, c, "other", &sluicetest.Opts{Status: sluicetype.StatusPending})

		res = sluicetest.Work(ctx, t, c, "flaky")
		require.Equal(t, sluice.RunResult{OK: true, Retried: 1}, res)
		f := sluicetest.RequireEnqueued(ctx, t, c, "flaky", &sluicetest.Opts{Status: sluicetype.StatusPending})
		require.Equal(t, 1, f.Attempts)
		require.Contains(t, f.LastError, "smtp down")
		// Its retry is not due yet, so a second pass leaves it.
		require.Equal(t, sluice.RunResult{OK: true}, sluicetest.Work(ctx, t, c, "flaky"))
	})
}
