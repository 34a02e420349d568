package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job is a job of type "t" in queue, keyed key with dedupe mode dedupe
// (permanent when empty), for a driver's own tests.
func Job(queue, key, dedupe string) driver.InsertJob {
	if dedupe == "" {
		dedupe = sluicetype.DedupePermanent
	}
	return driver.InsertJob{Queue: queue, Type: "t", Key: key, Dedupe: dedupe, Payload: []byte(`{"n": 1}`), MaxAttempts: 3}
}

// Insert inserts jobs and fails the test unless each got a result.
func Insert(t testing.TB, ctx context.Context, d driver.Driver, jobs ...driver.InsertJob) []driver.InsertResult {
	t.Helper()
	res, err := d.Insert(ctx, driver.InsertParams{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("got %d results for %d jobs", len(res), len(jobs))
	}
	return res
}

// Get reads job id, failing the test on an error.
func Get(t testing.TB, ctx context.Context, d driver.Driver, id int64) *sluicetype.JobRow {
	t.Helper()
	j, err := d.GetJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Claim claims from p.Queue, by default up to 100 jobs for a minute under
// a token named after the queue, failing the test on an error.
func Claim(t testing.TB, ctx context.Context, d driver.Driver, p driver.ClaimParams) []sluicetype.JobRow {
	t.Helper()
	if p.Token == "" {
		p.Token = "tok-" + p.Queue
	}
	if p.Lease == 0 {
		p.Lease = time.Minute
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	jobs, err := d.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
