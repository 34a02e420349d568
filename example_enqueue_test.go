package sluice_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

// Enqueue several jobs in one call: one transaction, multi-row inserts
// where the database allows, and results in the order given. A job whose
// business key is already taken comes back as a duplicate of the first.
func ExampleClient_EnqueueMany() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.EnqueueMany(ctx, []sluice.EnqueueParams{
		{Type: "send_email", Key: "welcome:1", Payload: map[string]any{"user_id": 1}},
		{Type: "send_email", Key: "welcome:2", Payload: map[string]any{"user_id": 2}},
		{Type: "send_email", Key: "welcome:1", Payload: map[string]any{"user_id": 1}}, // the first job's key
		{Type: "resize", Payload: map[string]any{"image": "cat.png"}, Priority: -1},
	})
	if err != nil {
		log.Fatal(err)
	}
	for i, r := range res {
		fmt.Printf("%d: duplicate %v, same job as the first: %v\n", i, r.Duplicate, r.ID == res[0].ID)
	}
	// Output:
	// 0: duplicate false, same job as the first: true
	// 1: duplicate false, same job as the first: false
	// 2: duplicate true, same job as the first: true
	// 3: duplicate false, same job as the first: false
}

// EnqueueMany is all or nothing: one invalid job refuses the whole call
// before anything is written, and the error names the job and the field.
func ExampleClient_EnqueueMany_allOrNothing() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.EnqueueMany(ctx, []sluice.EnqueueParams{
		{Type: "send_email", Key: "welcome:1"},
		{Type: "send_email", Key: "welcome:2", Priority: 40000}, // priorities are -32768 to 32767
	})
	var bad *sluice.InputError
	if errors.As(err, &bad) {
		fmt.Println("refused, field:", bad.Field)
	}
	fmt.Println(err)
	jobs, err := client.Jobs(ctx, sluicetype.ListParams{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("jobs written:", len(jobs))
	// Output:
	// refused, field: priority
	// job 1: priority: 40000 is out of range: want -32768 to 32767
	// jobs written: 0
}

// ResizeImage is a typed job's arguments for the examples below.
type ResizeImage struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func (ResizeImage) Kind() string { return "resize_image" }

// Enqueue a typed job: the args value decides the type (its Kind) and the
// payload (the struct as JSON); EnqueueParams gives the rest, here a key
// and a delay.
func ExampleClient_EnqueueArgs() {
	d, done := exampleDriver()
	defer done()
	ctx := context.Background()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	r, err := client.EnqueueArgs(ctx, ResizeImage{Image: "cat.png", Width: 640}, sluice.EnqueueParams{
		Key:   "resize:cat.png:640",
		Delay: time.Hour,
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Type, job.Key, job.Status, string(job.Payload))
	fmt.Println("runs in about an hour:", job.NextRunAt.Sub(job.CreatedAt).Round(time.Minute))

	// Type and Payload belong to the args; giving them too is refused.
	_, err = client.EnqueueArgs(ctx, ResizeImage{Image: "dog.png"}, sluice.EnqueueParams{Type: "resize"})
	fmt.Println(err)
	// Output:
	// resize_image resize:cat.png:640 pending {"image":"cat.png","width":640}
	// runs in about an hour: 1h0m0s
	// type: "resize" given beside args sluice_test.ResizeImage, whose Kind decides it; leave it empty
}

// Check a job before enqueueing it, as a form handler would, without
// writing anything: the error is an *InputError naming the field.
func ExampleClient_ValidateEnqueue() {
	d, done := exampleDriver()
	defer done()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []sluice.EnqueueParams{
		{Type: "send_email", Payload: map[string]string{"to": "ada@example.com"}},
		{Type: "send_email", Payload: `{"to":"ada@example.com"}`}, // a string, not an object
		{Type: "send_email", Delay: time.Minute, RunAt: time.Now().Add(time.Hour)},
	} {
		err := client.ValidateEnqueue(p)
		var bad *sluice.InputError
		if errors.As(err, &bad) {
			fmt.Println("bad", bad.Field)
			continue
		}
		fmt.Println("ok", err)
	}
	// Output:
	// ok <nil>
	// bad payload
	// bad run_at
}

// Decode a job request as the HTTP API and `sluice enqueue --ndjson` do:
// strictly, so that a misspelled field is an error rather than a field
// silently dropped, then turn it into EnqueueParams.
func ExampleDecodeEnqueueRequest() {
	req, err := sluice.DecodeEnqueueRequest([]byte(`{"type":"send_email","key":"welcome:42","payload":{"user_id":42},"delay":"2h"}`))
	if err != nil {
		log.Fatal(err)
	}
	p, err := req.Params()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Type, p.Key, p.Delay, string(p.Payload.(json.RawMessage)))

	_, err = sluice.DecodeEnqueueRequest([]byte(`{"type":"send_email","Key":"welcome:42"}`))
	fmt.Println(err)
	// Output:
	// send_email welcome:42 2h0m0s {"user_id":42}
	// Key: unknown field (field names are case-sensitive)
}
