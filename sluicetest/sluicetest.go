// Package sluicetest helps applications test their own use of sluice, as
// River's rivertest does: assert that code under test enqueued a job (in
// the caller's transaction too) or did not, and run the jobs of a type
// inline through the client's real execution path.
//
// Every helper reads through the Client, so it works on each database
// sluice supports; none writes SQL on sluice's tables.
package sluicetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

// Opts narrows the jobs a Require helper matches; a zero field matches
// any job.
type Opts struct {
	Key       string
	Queue     string
	Partition string
	Status    sluicetype.Status
	// Payload matches a job whose payload equals this value encoded as
	// JSON, compared as JSON values (key order and spacing aside).
	Payload any
	// Tx reads inside the caller's transaction, so that jobs it enqueued
	// and has not committed count. Without it, only committed jobs count.
	Tx *sql.Tx
}

// RequireEnqueued fails t unless a job of jobType matching opts (nil: any)
// exists, and returns the newest such job. The failure lists the jobs of
// jobType it saw, to show what differed.
func RequireEnqueued(ctx context.Context, t testing.TB, c *sluice.Client, jobType string, opts *Opts) sluicetype.JobRow {
	t.Helper()
	matched, all := find(ctx, t, c, jobType, opts)
	if len(matched) == 0 {
		t.Fatalf("sluicetest: no job of type %q matches %s; %s", jobType, describeOpts(opts), describeJobs(all))
	}
	return matched[0]
}

// RequireNotEnqueued fails t if a job of jobType matching opts (nil: any)
// exists.
func RequireNotEnqueued(ctx context.Context, t testing.TB, c *sluice.Client, jobType string, opts *Opts) {
	t.Helper()
	if matched, _ := find(ctx, t, c, jobType, opts); len(matched) > 0 {
		t.Fatalf("sluicetest: want no job of type %q matching %s; %s", jobType, describeOpts(opts), describeJobs(matched))
	}
}

// RequireEnqueuedArgs is RequireEnqueued for a typed job: the type is T's
// kind, and it returns the newest match's payload decoded into T.
func RequireEnqueuedArgs[T sluice.JobArgs](ctx context.Context, t testing.TB, c *sluice.Client, opts *Opts) T {
	t.Helper()
	job := RequireEnqueued(ctx, t, c, sluice.KindOf[T](), opts)
	var args T
	if err := json.Unmarshal(job.Payload, &args); err != nil {
		t.Fatalf("sluicetest: job %d: decode payload %s as %s: %v", job.ID, job.Payload, reflect.TypeFor[T](), err)
	}
	return args
}

// Work runs the runnable pending jobs of jobType now, with the handlers c
// was configured with, through c.RunOnce: claimed under a lease, run, and
// completed, retried or failed exactly as in production. It runs each
// queue that holds such jobs, and returns the passes' counts summed. Jobs
// that are not due yet (a delay, a retry's backoff) stay pending. Use a
// client that is not started, so that its own workers do not take the
// jobs first.
func Work(ctx context.Context, t testing.TB, c *sluice.Client, jobType string) sluice.RunResult {
	t.Helper()
	pending, _ := find(ctx, t, c, jobType, &Opts{Status: sluicetype.StatusPending})
	perQueue := map[string]int{}
	for _, j := range pending {
		perQueue[j.Queue]++
	}
	queues := make([]string, 0, len(perQueue))
	for q := range perQueue {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	total := sluice.RunResult{OK: true}
	for _, q := range queues {
		r, err := c.RunOnce(ctx, sluice.RunParams{Queue: q, Type: jobType, MaxJobs: perQueue[q]})
		if err != nil {
			t.Fatalf("sluicetest: running the %q jobs of queue %q: %v", jobType, q, err)
		}
		if r.Skipped != "" {
			t.Fatalf("sluicetest: running the %q jobs of queue %q: skipped, %s", jobType, q, r.Skipped)
		}
		total.Done += r.Done
		total.Retried += r.Retried
		total.Failed += r.Failed
		total.Requeued += r.Requeued
	}
	return total
}

// find returns the jobs of jobType that match opts, newest first, and all
// the jobs of jobType it read.
func find(ctx context.Context, t testing.TB, c *sluice.Client, jobType string, opts *Opts) (matched, all []sluicetype.JobRow) {
	t.Helper()
	if opts == nil {
		opts = &Opts{}
	}
	var want any
	if opts.Payload != nil {
		b, err := json.Marshal(opts.Payload)
		if err != nil {
			t.Fatalf("sluicetest: Opts.Payload cannot be encoded as JSON: %v", err)
		}
		want = jsonValue(t, b)
	}
	p := sluicetype.ListParams{Type: jobType, Tx: opts.Tx, Limit: 1000}
	for {
		page, err := c.Jobs(ctx, p)
		if err != nil {
			t.Fatalf("sluicetest: listing jobs of type %q: %v", jobType, err)
		}
		for _, j := range page {
			all = append(all, j)
			if (opts.Key == "" || j.Key == opts.Key) && (opts.Queue == "" || j.Queue == opts.Queue) &&
				(opts.Partition == "" || j.Partition == opts.Partition) && (opts.Status == "" || j.Status == opts.Status) &&
				(want == nil || reflect.DeepEqual(want, jsonValue(t, j.Payload))) {
				matched = append(matched, j)
			}
		}
		if len(page) < p.Limit {
			return matched, all
		}
		p.AfterID = page[len(page)-1].ID
	}
}

func jsonValue(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("sluicetest: payload %s is not JSON: %v", b, err)
	}
	return v
}

func describeOpts(o *Opts) string {
	if o == nil {
		return "any options"
	}
	var parts []string
	for _, f := range []struct{ name, v string }{{"key", o.Key}, {"queue", o.Queue}, {"partition", o.Partition}, {"status", string(o.Status)}} {
		if f.v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", f.name, f.v))
		}
	}
	if o.Payload != nil {
		b, _ := json.Marshal(o.Payload)
		parts = append(parts, "payload="+string(b))
	}
	if o.Tx != nil {
		parts = append(parts, "in the given transaction")
	}
	if len(parts) == 0 {
		return "any options"
	}
	return strings.Join(parts, " ")
}

// describeJobs lists up to ten jobs for a failure message.
func describeJobs(jobs []sluicetype.JobRow) string {
	if len(jobs) == 0 {
		return "there are no jobs of that type"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs of that type:", len(jobs))
	for i, j := range jobs {
		if i == 10 {
			b.WriteString("\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  #%d key=%q queue=%q partition=%q status=%s payload=%s", j.ID, j.Key, j.Queue, j.Partition, j.Status, j.Payload)
	}
	return b.String()
}
