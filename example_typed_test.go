package sluice_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sluicehq/sluice"
)

// SendEmail is a typed job's arguments: its Kind names the job type, and
// the struct is the payload, encoded as JSON.
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// Typed jobs: the handler takes SendEmail, not raw JSON, and the enqueue
// takes a SendEmail, so the type name and the payload's shape are checked
// at compile time.
func ExampleAddWorker() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	types := map[string]sluice.Type{}
	sluice.AddWorker(types, sluice.WorkerFunc[SendEmail](func(ctx context.Context, job *sluice.Job, e SendEmail) error {
		fmt.Printf("%s: %q to %s\n", job.Type, e.Subject, e.To)
		return nil
	}), sluice.Type{Queue: "mail"})
	client, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.EnqueueArgs(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, sluice.EnqueueParams{Key: "welcome:42"}); err != nil {
		log.Fatal(err)
	}
	if _, err := client.RunOnce(ctx, sluice.RunParams{Queue: "mail"}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// send_email: "Welcome" to ada@example.com
}
