package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/handler/webhook"
)

// secret signs the deliveries of these examples; a real one comes from a
// secret store, shared by sluice's config and the receiver.
const secret = "4e1b7f0c9a2d63e85f17b0c4d9e2a6f3"

// A job type run by a webhook, delivered to a receiver that checks the
// signature with VerifyKey before it trusts the body, and records the
// Idempotency-Key so that a repeated delivery is applied once. A 2xx
// answer succeeds the job and its body becomes the job's result.
func ExampleNew() {
	// The receiver, in the application that does the work.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if err := webhook.VerifyKey(secret, r.Header.Get("X-Sluice-Signature"), key, body, 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized) // a 4xx fails the job at once
			return
		}
		var msg webhook.Message
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, "bad message", http.StatusBadRequest)
			return
		}
		fmt.Printf("received %s %s, attempt %d of %d: %s\n", msg.Type, msg.Key, msg.Attempt, msg.MaxAttempts, msg.Payload)
		fmt.Println("idempotency key names the job:", strings.HasPrefix(key, fmt.Sprintf("job-%d-", msg.ID)))
		io.WriteString(w, `{"synced":true}`)
	}))
	defer receiver.Close()

	// The sluice side: a job type whose handler is the webhook.
	hook, err := webhook.New(webhook.Config{URL: receiver.URL + "/jobs", Secret: secret, Timeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
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
	client, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{
		"order_sync": {Handler: hook},
	}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := client.Enqueue(ctx, sluice.EnqueueParams{Type: "order_sync", Key: "order:1001", Payload: map[string]int{"id": 1001}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.RunOnce(ctx, sluice.RunParams{}); err != nil {
		log.Fatal(err)
	}
	job, err := client.Job(ctx, r.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, job.Result)
	// Output:
	// received order_sync order:1001, attempt 1 of 5: {"id":1001}
	// idempotency key names the job: true
	// success {"synced":true}
}

// A receiver written in Go checks X-Sluice-Signature with VerifyKey
// (v2, which covers the Idempotency-Key too) or Verify (v1, the body
// only). Anything altered in transit, or a signature made with another
// secret, is refused. Here the header is made with SignKey, as sluice
// makes it, at a fixed time; a tolerance of 0 skips the age check, which a
// real receiver keeps (a few minutes) to refuse replays.
func ExampleVerifyKey() {
	body := []byte(`{"id":42,"type":"order_sync","key":"order:1001","attempt":1,"max_attempts":5,"payload":{"id":1001}}`)
	key := "job-42-1796570096000000"
	sentAt := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	header := webhook.SignKey(secret, sentAt, key, body)

	fmt.Println("genuine:", webhook.VerifyKey(secret, header, key, body, 0))
	fmt.Println("v1 too:", webhook.Verify(secret, header, body, 0))
	fmt.Println("other body:", webhook.VerifyKey(secret, header, key, []byte(`{"id":43}`), 0))
	fmt.Println("other key:", webhook.VerifyKey(secret, header, "job-43-1796570096000000", body, 0))
	fmt.Println("other secret:", webhook.VerifyKey("not-the-secret", header, key, body, 0))
	fmt.Println("v1 only:", webhook.VerifyKey(secret, webhook.Sign(secret, sentAt, body), key, body, 0))
	fmt.Println("too old:", webhook.VerifyKey(secret, header, key, body, 5*time.Minute) != nil)
	// Output:
	// genuine: <nil>
	// v1 too: <nil>
	// other body: webhook signature: mismatch
	// other key: webhook signature: mismatch
	// other secret: webhook signature: mismatch
	// v1 only: webhook signature: no v2 signature
	// too old: true
}

// An Endpoint posts a body and classifies the answer, as a job's webhook
// does: a 2xx returns the response body; 429 and 5xx are transient, with
// the Retry-After the server asked for; any other 4xx is permanent.
func ExampleEndpoint_Post() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "accepted")
		case "/busy":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			http.Error(w, "no such order", http.StatusUnprocessableEntity)
		}
	}))
	defer receiver.Close()
	ctx := context.Background()
	for _, path := range []string{"/ok", "/busy", "/bad"} {
		e, err := webhook.NewEndpoint(webhook.Config{URL: receiver.URL + path, Secret: secret})
		if err != nil {
			log.Fatal(err)
		}
		body, err := e.Post(ctx, []byte(`{"id":1001}`), "order-1001", nil)
		delay, retryAfter := sluice.RetryAfterDelay(err)
		fmt.Printf("%s: body %q, error %v, permanent %v, retry after %v %v\n",
			path, body, err, sluice.IsPermanent(err), delay, retryAfter)
	}
	// Output:
	// /ok: body "accepted", error <nil>, permanent false, retry after 0s false
	// /busy: body "", error HTTP 429 Too Many Requests, permanent false, retry after 2m0s true
	// /bad: body "", error HTTP 422: no such order, permanent true, retry after 0s false
}
