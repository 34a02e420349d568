package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/sluicetype"
)

// runOne enqueues one job on client, runs one pass and returns
// the pass's counts and the job as it is after it.
func runOne(ctx context.Context, client *sluice.Client, p sluice.EnqueueParams) (sluice.RunResult, *sluicetype.JobRow) {
	r, err := client.Enqueue(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.RunOnce(ctx, sluice.RunParams{})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	return res, job
}

// A job type's settings are the defaults of its jobs: an enqueue that
// names neither queue nor attempts gets the type's, and a failed attempt
// waits out the type's backoff (a delay drawn from the upper half of
// Base*2^(attempt-1), capped at Max) before it runs again.
func ExampleType() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"charge_card": {
				Queue:       "payments",
				MaxAttempts: 3,
				Timeout:     30 * time.Second,
				Backoff:     sluice.Backoff{Base: time.Hour, Max: 6 * time.Hour},
				Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
					return errors.New("card processor unavailable") // transient: retried
				}),
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, job := runOne(ctx, client, sluice.EnqueueParams{Type: "charge_card", Key: "invoice:9"})
	fmt.Println("retried:", res.Retried)
	fmt.Println(job.Queue, job.Status, "attempts", job.Attempts, "of", job.MaxAttempts)
	fmt.Println("last error:", job.LastError)
	wait := job.NextRunAt.Sub(job.UpdatedAt)
	fmt.Println("next attempt in 30m to 1h:", wait >= 30*time.Minute-time.Second && wait <= time.Hour+time.Second)
	// Output:
	// retried: 1
	// payments pending attempts 1 of 3
	// last error: card processor unavailable
	// next attempt in 30m to 1h: true
}

// A handler returns Permanent when retrying cannot help (a payload it
// cannot read, say): the job fails at once, whatever attempts remain.
func ExamplePermanent() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"send_sms": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				var msg struct{ Phone string }
				if err := job.Decode(&msg); err != nil || msg.Phone == "" {
					return sluice.Permanent(errors.New("no phone number in the payload"))
				}
				return nil
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, job := runOne(ctx, client, sluice.EnqueueParams{Type: "send_sms", Payload: map[string]string{"text": "hi"}})
	fmt.Println("failed:", res.Failed)
	fmt.Println(job.Status, "after", job.Attempts, "of", job.MaxAttempts, "attempts:", job.LastError)
	// Output:
	// failed: 1
	// failed after 1 of 5 attempts: no phone number in the payload
}

// A handler returns Snooze to wait for something without failing: the
// job goes back to pending for the given time, and the attempt it was
// using is given back.
func ExampleSnooze() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"ship_order": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				// The warehouse has not confirmed the stock yet.
				return sluice.Snooze(15 * time.Minute)
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, job := runOne(ctx, client, sluice.EnqueueParams{Type: "ship_order", Key: "order:77"})
	fmt.Println("requeued:", res.Requeued)
	fmt.Println(job.Status, "attempts used:", job.Attempts)
	fmt.Println("runs again in:", job.NextRunAt.Sub(job.UpdatedAt).Round(time.Minute))
	// Output:
	// requeued: 1
	// pending attempts used: 0
	// runs again in: 15m0s
}

// A handler that is told to wait by the remote side (an HTTP 429 with
// Retry-After, say) returns RetryAfter: the next attempt waits that long
// instead of the type's backoff.
func ExampleRetryAfter() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"call_api": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				return sluice.RetryAfter(errors.New("HTTP 429"), 10*time.Minute)
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, job := runOne(ctx, client, sluice.EnqueueParams{Type: "call_api"})
	fmt.Println("retried:", res.Retried, "-", job.LastError)
	fmt.Println("runs again in:", job.NextRunAt.Sub(job.UpdatedAt).Round(time.Minute))
	// Output:
	// retried: 1 - HTTP 429
	// runs again in: 10m0s
}

// A handler writes through Job.Tx to make its writes and the job's success
// one transaction: when the handler fails, its writes are rolled back with
// the attempt, so a retry never finds half of them done.
func ExampleJob_Tx() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	if _, err := d.DB().ExecContext(ctx, "CREATE TABLE points (user_id INTEGER, points INTEGER)"); err != nil {
		log.Fatal(err)
	}
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"award_points": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				var award struct{ UserID, Points int }
				if err := job.Decode(&award); err != nil {
					return sluice.Permanent(err)
				}
				tx, err := job.Tx(ctx)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO points (user_id, points) VALUES (?, ?)", award.UserID, award.Points); err != nil {
					return err
				}
				if award.UserID == 2 {
					return errors.New("notification service down") // the INSERT above is rolled back
				}
				return nil // sluice commits the INSERT with the job's success
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.EnqueueMany(ctx, []sluice.EnqueueParams{
		{Type: "award_points", Payload: map[string]int{"UserID": 1, "Points": 10}},
		{Type: "award_points", Payload: map[string]int{"UserID": 2, "Points": 20}},
	}); err != nil {
		log.Fatal(err)
	}
	res, err := client.RunOnce(ctx, sluice.RunParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done %d, retried %d\n", res.Done, res.Retried)
	rows, err := d.DB().QueryContext(ctx, "SELECT user_id, points FROM points ORDER BY user_id")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var user, points int
		if err := rows.Scan(&user, &points); err != nil {
			log.Fatal(err)
		}
		fmt.Println("user", user, "has", points, "points")
	}
	// Output:
	// done 1, retried 1
	// user 1 has 10 points
}

// A handler stores a short result with SetResult; it is kept on the job
// when the job succeeds, for the dashboard, the CLI and Client.Job.
func ExampleJob_SetResult() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"export_csv": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				job.SetResult(`{"rows":1200,"file":"exports/2026-12.csv"}`)
				return nil
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, job := runOne(ctx, client, sluice.EnqueueParams{Type: "export_csv"})
	fmt.Println(job.Status, job.Result)
	// Output:
	// success {"rows":1200,"file":"exports/2026-12.csv"}
}

// A schedule enqueues a job of its type at every slot of a cron
// expression, on every client that has it, once per slot however many
// nodes run it: each slot's job is keyed sched:<name>:<slot>.
func ExampleSchedule() {
	ctx := context.Background()
	d, done := exampleDriver()
	defer done()
	every, err := cron.Parse("@every 1s", nil) // "0 3 * * *", "@hourly", ...
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan string, 10)
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Queues: map[string]sluice.QueueConfig{sluice.DefaultQueue: {Concurrency: 1}},
		Types: map[string]sluice.Type{
			"refresh_rates": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				ran <- job.Key
				return nil
			})},
		},
		Schedules: []sluice.Schedule{{Name: "rates", Spec: every, Type: "refresh_rates"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	select {
	case key := <-ran:
		fmt.Println("ran", strings.HasPrefix(key, "sched:rates:"))
	case <-time.After(30 * time.Second):
		fmt.Println("timed out")
	}
	for _, s := range client.Schedules() {
		fmt.Println(s.Name, s.Type, s.Spec)
	}
	// Output:
	// ran true
	// rates refresh_rates @every 1s
}
