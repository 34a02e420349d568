package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

// failingSync is a client whose "sync_order" handler fails for good on
// the orders whose key starts with "order:bad", and three passes' worth of
// such jobs: the setup of the bulk examples below.
func failingSync(ctx context.Context, client **sluice.Client) func() {
	d, done := exampleDriver()
	c, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"sync_order": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				if strings.HasPrefix(job.Key, "order:bad") {
					return sluice.Permanent(errors.New("order not found upstream"))
				}
				return nil
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"order:1", "order:bad-2", "order:bad-3", "order:4"} {
		if _, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "sync_order", Key: key}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := c.RunOnce(ctx, sluice.RunParams{}); err != nil {
		log.Fatal(err)
	}
	*client = c
	return done
}

// Retry every failed job that matches a filter, as the dashboard's bulk
// buttons do: count first, then act on at most the jobs counted (UpTo),
// so that a job failing after the count is left for the next look.
func ExampleClient_Bulk() {
	ctx := context.Background()
	var client *sluice.Client
	defer failingSync(ctx, &client)()

	filter := sluicetype.ListParams{Status: sluicetype.StatusFailed, Type: "sync_order", KeyPrefix: "order:bad"}
	n, err := client.CountBulk(ctx, sluicetype.BulkRetry, filter)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("would retry:", n.Count)
	changed, err := client.Bulk(ctx, sluicetype.BulkRetry, filter, n.UpTo)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retried:", changed)
	pending, err := client.Jobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusPending})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range pending {
		fmt.Println(j.Key, j.Status, "attempts", j.Attempts, "of", j.MaxAttempts)
	}
	// Output:
	// would retry: 2
	// retried: 2
	// order:bad-3 pending attempts 1 of 5
	// order:bad-2 pending attempts 1 of 5
}

// Cancel pending jobs by filter, then delete what is cancelled: the bulk
// actions apply only to the statuses sluicetype.BulkStatuses lists, so a
// finished job matching the filter is left alone.
func ExampleClient_Bulk_cancelAndDelete() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"tenant:7:report", "tenant:7:export", "tenant:8:report"} {
		if _, err := client.Enqueue(ctx, sluice.EnqueueParams{Type: "report", Key: key}); err != nil {
			log.Fatal(err)
		}
	}
	tenant7 := sluicetype.ListParams{KeyPrefix: "tenant:7:"}
	cancelled, err := client.Bulk(ctx, sluicetype.BulkCancel, tenant7, 0)
	if err != nil {
		log.Fatal(err)
	}
	deleted, err := client.Bulk(ctx, sluicetype.BulkDelete, sluicetype.ListParams{Status: sluicetype.StatusCancelled}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled", cancelled, "deleted", deleted)
	left, err := client.Jobs(ctx, sluicetype.ListParams{})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range left {
		fmt.Println(j.Key, j.Status)
	}
	// Output:
	// cancelled 2 deleted 2
	// tenant:8:report pending
}

// Retry one failed job, and every failed job of a type: each goes back to
// pending, due now, with at least one attempt left.
func ExampleClient_RetryFailed() {
	ctx := context.Background()
	var client *sluice.Client
	defer failingSync(ctx, &client)()

	failed, err := client.Jobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusFailed})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("failed:", len(failed), failed[0].LastError)
	if err := client.Retry(ctx, failed[0].ID); err != nil {
		log.Fatal(err)
	}
	n, err := client.RetryFailed(ctx, "sync_order")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("then retried by type:", n)
	// A job that is not failed or cancelled cannot be retried.
	err = client.Retry(ctx, failed[0].ID)
	fmt.Println(errors.Is(err, sluicetype.ErrWrongState))
	// Output:
	// failed: 2 order not found upstream
	// then retried by type: 1
	// true
}

// Pause a queue: no worker or pass claims from it until it is resumed,
// and its jobs wait, uncharged.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"thumbnail": {Queue: "media", Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error { return nil })},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, sluice.EnqueueParams{Type: "thumbnail"}); err != nil {
		log.Fatal(err)
	}
	if err := client.PauseQueue(ctx, "media"); err != nil {
		log.Fatal(err)
	}
	res, err := client.RunOnce(ctx, sluice.RunParams{Queue: "media"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("paused: done", res.Done)
	if err := client.ResumeQueue(ctx, "media"); err != nil {
		log.Fatal(err)
	}
	res, err = client.RunOnce(ctx, sluice.RunParams{Queue: "media"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resumed: done", res.Done)
	// A queue nothing knows is refused, so that a typo does not go unseen.
	fmt.Println(client.PauseQueue(ctx, "mdia") != nil)
	// Output:
	// paused: done 0
	// resumed: done 1
	// true
}
