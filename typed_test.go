package sluice_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// welcomeArgs is a typed job's payload, by value.
type welcomeArgs struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

func (welcomeArgs) Kind() string { return "welcome_email" }

// invoiceArgs is a typed job's payload used through a pointer.
type invoiceArgs struct {
	Number string `json:"number"`
}

func (*invoiceArgs) Kind() string { return "invoice" }

func TestTypedJobs(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var mu sync.Mutex
		var welcomed []welcomeArgs
		var invoiced []string
		types := map[string]sluice.Type{}
		sluice.AddWorker(types, sluice.WorkerFunc[welcomeArgs](func(ctx context.Context, job *sluice.Job, a welcomeArgs) error {
			mu.Lock()
			defer mu.Unlock()
			welcomed = append(welcomed, a)
			return nil
		}), sluice.Type{Queue: "mail"})
		sluice.AddWorker(types, sluice.WorkerFunc[*invoiceArgs](func(ctx context.Context, job *sluice.Job, a *invoiceArgs) error {
			mu.Lock()
			defer mu.Unlock()
			invoiced = append(invoiced, a.Number)
			return nil
		}), sluice.Type{})
		require.Contains(t, types, "welcome_email")
		require.Equal(t, "mail", types["welcome_email"].Queue)
		require.Equal(t, "invoice", sluice.KindOf[*invoiceArgs]())

		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
		require.NoError(t, err)

		// The enqueue takes its type and queue from the args' kind.
		r, err := c.EnqueueArgs(ctx, welcomeArgs{UserID: 42, Email: "ada@example.com"}, sluice.EnqueueParams{Key: "welcome:42"})
		require.NoError(t, err)
		job, err := c.Job(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, "welcome_email", job.Type)
		require.Equal(t, "mail", job.Queue)
		require.JSONEq(t, `{"user_id":42,"email":"ada@example.com"}`, string(job.Payload))

		// In a transaction: a rolled-back job never existed.
		tx, err := d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = c.EnqueueArgsTx(ctx, tx, &invoiceArgs{Number: "rolled-back"}, sluice.EnqueueParams{})
		require.NoError(t, err)
		require.NoError(t, tx.Rollback())
		tx, err = d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = c.EnqueueArgsTx(ctx, tx, &invoiceArgs{Number: "F-1"}, sluice.EnqueueParams{})
		require.NoError(t, err)
		require.NoError(t, tx.Commit())

		res, err := c.RunOnce(ctx, sluice.RunParams{Queue: "mail"})
		require.NoError(t, err)
		require.Equal(t, 1, res.Done)
		res, err = c.RunOnce(ctx, sluice.RunParams{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Done)
		require.Equal(t, []welcomeArgs{{UserID: 42, Email: "ada@example.com"}}, welcomed)
		require.Equal(t, []string{"F-1"}, invoiced)
	})
}

func TestTypedPayloadThatDoesNotDecode(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		types := map[string]sluice.Type{}
		called := false
		sluice.AddWorker(types, sluice.WorkerFunc[welcomeArgs](func(context.Context, *sluice.Job, welcomeArgs) error {
			called = true
			return nil
		}), sluice.Type{})
		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
		require.NoError(t, err)
		// Written by something other than the typed enqueue: a webhook
		// producer, the CLI, an older version of the program.
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "welcome_email", Payload: json.RawMessage(`{"user_id":"forty-two"}`)})
		require.NoError(t, err)
		res, err := c.RunOnce(ctx, sluice.RunParams{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Failed, "a payload that cannot decode fails at once, not after every retry")
		require.False(t, called)
		job, err := c.Job(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusFailed, job.Status)
		require.Equal(t, 1, job.Attempts)
		require.Contains(t, job.LastError, "as sluice_test.welcomeArgs")
		require.Contains(t, job.LastError, "user_id")
	})
}

func TestEnqueueArgsRejectsTypeAndPayload(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		for field, p := range map[string]sluice.EnqueueParams{
			"type":    {Type: "other"},
			"payload": {Payload: map[string]int{"n": 1}},
		} {
			_, err := c.EnqueueArgs(ctx, welcomeArgs{}, p)
			var in *sluice.InputError
			require.True(t, errors.As(err, &in), "%v", err)
			require.Equal(t, field, in.Field)
		}
		var nilArgs *invoiceArgs
		_, err = c.EnqueueArgs(ctx, nilArgs, sluice.EnqueueParams{})
		var in *sluice.InputError
		require.True(t, errors.As(err, &in), "%v", err)
		require.Equal(t, "payload", in.Field)
		jobs, err := c.Jobs(ctx, sluicetype.ListParams{})
		require.NoError(t, err)
		require.Empty(t, jobs, "a rejected enqueue writes nothing")
	})
}

func TestAddWorkerTwicePanics(t *testing.T) {
	types := map[string]sluice.Type{}
	w := sluice.WorkerFunc[welcomeArgs](func(context.Context, *sluice.Job, welcomeArgs) error { return nil })
	sluice.AddWorker(types, w, sluice.Type{})
	require.PanicsWithValue(t, `sluice: AddWorker: job type "welcome_email" is already registered`, func() {
		sluice.AddWorker(types, w, sluice.Type{})
	})
}
