package sluice_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exampleDriver opens a migrated SQLite database in a fresh directory, as
// ExampleNewClient shows; the other examples use it to stay short.
func exampleDriver() (driver.Driver, func()) {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "sluice.db"), dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	return d, func() { d.Close(); os.RemoveAll(dir) }
}

// A client that only enqueues: open the database by URL (SQLite here;
// mysql:// and postgres:// URLs work the same), migrate it once, and
// enqueue. A second job with the same business key is not an error: it
// returns the first job's id.
func ExampleNewClient() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "sluice.db"), dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if _, err := d.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		r, err := client.Enqueue(ctx, sluice.EnqueueParams{
			Type:    "send_email",
			Key:     "welcome:42",
			Payload: map[string]any{"user_id": 42},
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("job %d, duplicate %v\n", r.ID, r.Duplicate)
	}
	// Output:
	// job 1, duplicate false
	// job 1, duplicate true
}

// Enqueue in the application's own transaction: the job exists only if the
// order does. The rolled-back order leaves no job behind.
func ExampleClient_EnqueueTx() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	db := d.DB()
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)"); err != nil {
		log.Fatal(err)
	}
	placeOrder := func(id int, commit bool) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id, total) VALUES (?, ?)", id, 1999); err != nil {
			log.Fatal(err)
		}
		if _, err := client.EnqueueTx(ctx, tx, sluice.EnqueueParams{
			Type: "send_receipt", Key: fmt.Sprintf("receipt:%d", id), Payload: map[string]int{"order": id},
		}); err != nil {
			log.Fatal(err)
		}
		if commit {
			if err := tx.Commit(); err != nil {
				log.Fatal(err)
			}
		}
	}
	placeOrder(1, true)
	placeOrder(2, false)
	jobs, err := client.Jobs(ctx, sluicetype.ListParams{Type: "send_receipt"})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		fmt.Println(j.Key, j.Status)
	}
	// Output:
	// receipt:1 pending
}

// A worker: a client with a queue runs the Go handlers of its types once
// started, until Stop.
func ExampleClient_Start() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	sent := make(chan string)
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Queues: map[string]sluice.QueueConfig{sluice.DefaultQueue: {Concurrency: 2}},
		Types: map[string]sluice.Type{
			"send_email": {Timeout: time.Minute, Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				var msg struct{ To string }
				if err := job.Decode(&msg); err != nil {
					return sluice.Permanent(err) // the same payload would fail every retry
				}
				sent <- msg.To
				return nil
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	if _, err := client.Enqueue(ctx, sluice.EnqueueParams{Type: "send_email", Payload: map[string]string{"To": "ada@example.com"}}); err != nil {
		log.Fatal(err)
	}
	select {
	case to := <-sent:
		fmt.Println("sent to", to)
	case <-time.After(30 * time.Second):
		fmt.Println("timed out")
	}
	// Output:
	// sent to ada@example.com
}

// A cron-triggered pass: no daemon, the program runs the jobs due now and
// returns. A failed attempt is retried by a later pass after its backoff.
func ExampleClient_RunOnce() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{
		Driver: d,
		Types: map[string]sluice.Type{
			"resize": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				if job.Key == "img:3" {
					return fmt.Errorf("image store unavailable")
				}
				return nil
			})},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := client.Enqueue(ctx, sluice.EnqueueParams{Type: "resize", Key: fmt.Sprintf("img:%d", i)}); err != nil {
			log.Fatal(err)
		}
	}
	res, err := client.RunOnce(ctx, sluice.RunParams{MaxJobs: 10, MaxDuration: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done %d, retried %d, failed %d\n", res.Done, res.Retried, res.Failed)
	// Output:
	// done 2, retried 1, failed 0
}
