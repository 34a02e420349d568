// Command quickstart runs sluice on an embedded SQLite file: it enqueues a
// few jobs (one of them twice, to show dedupe), works them with a Go
// handler that fails once to show a retry, and prints each event.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	path := os.TempDir() + "/sluice-quickstart.db"
	d, err := dburl.Open("sqlite:"+path, dburl.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		return err
	}

	var done atomic.Int32
	var failedOnce atomic.Bool
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 4}},
		Types: map[string]sluice.Type{
			"send_email": {
				Backoff: sluice.Backoff{Base: 500 * time.Millisecond},
				Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
					var p struct{ To string }
					if err := job.Decode(&p); err != nil {
						return sluice.Permanent(err)
					}
					if p.To == "flaky@example.com" && !failedOnce.Swap(true) {
						fmt.Printf("  job %d (attempt %d): mail server busy, will retry\n", job.ID, job.Attempt)
						return errors.New("mail server busy")
					}
					fmt.Printf("  job %d (attempt %d): sent mail to %s (idempotency key %s)\n", job.ID, job.Attempt, p.To, job.IdempotencyKey())
					done.Add(1)
					return nil
				}),
			},
		},
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}

	stamp := time.Now().Format("150405.000")
	fmt.Printf("database: %s\nenqueuing:\n", path)
	for _, to := range []string{"ann@example.com", "bob@example.com", "flaky@example.com", "ann@example.com"} {
		r, err := client.Enqueue(ctx, sluice.EnqueueParams{
			Type:    "send_email",
			Key:     "welcome:" + to + ":" + stamp, // the business key: one welcome mail per address
			Payload: map[string]string{"to": to},
		})
		if err != nil {
			return err
		}
		fmt.Printf("  %-18s -> job %d duplicate=%v\n", to, r.ID, r.Duplicate)
	}
	fmt.Println("working:")
	deadline := time.Now().Add(15 * time.Second)
	for done.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	client.Stop(stop)
	if done.Load() < 3 {
		return fmt.Errorf("only %d of 3 jobs finished in time", done.Load())
	}
	fmt.Println("all jobs done; inspect them with: go run ./cmd/sluice --db sqlite:" + path + " jobs list")
	return nil
}
