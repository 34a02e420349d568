package drivertest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// BenchmarkEnqueue measures single-job enqueues, one transaction each, and
// bulk enqueues of 1,000 rows, per database.
func BenchmarkEnqueue(b *testing.B) {
	for _, name := range testdb.Names {
		b.Run(name+"/single", func(b *testing.B) {
			d := testdb.Open(b, name)
			ctx := context.Background()
			job := []driver.InsertJob{{Queue: "default", Type: "bench", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 5}}
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Insert(ctx, driver.InsertParams{Jobs: job}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run(name+"/bulk1000", func(b *testing.B) {
			d := testdb.Open(b, name)
			ctx := context.Background()
			jobs := make([]driver.InsertJob, 1000)
			for i := range jobs {
				jobs[i] = driver.InsertJob{Queue: "default", Type: "bench", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 5}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := d.Insert(ctx, driver.InsertParams{Jobs: jobs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(jobs))/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkClaimComplete measures the raw queue cycle with no handler: claim
// a batch of 500 under a lease, then complete it with one fenced batch.
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 500
	for _, name := range testdb.Names {
		b.Run(name, func(b *testing.B) {
			d := testdb.Open(b, name)
			ctx := context.Background()
			jobs := make([]driver.InsertJob, 5000)
			for i := range jobs {
				jobs[i] = driver.InsertJob{Queue: "default", Type: "bench", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 5}
			}
			refill := func() {
				b.StopTimer()
				if _, err := d.Insert(ctx, driver.InsertParams{Jobs: jobs}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			refill()
			claimed := 0
			b.ResetTimer()
			for b.Loop() {
				rows, err := d.Claim(ctx, driver.ClaimParams{Queue: "default", Limit: batch, Lease: time.Minute, Token: token()})
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) == 0 {
					refill()
					continue
				}
				cs := make([]driver.Completion, len(rows))
				for i, r := range rows {
					cs[i] = driver.Completion{ID: r.ID, Token: r.LockedBy, Status: sluicetype.StatusSuccess}
				}
				lost, err := d.Complete(ctx, driver.CompleteParams{Completions: cs})
				if err != nil || len(lost) > 0 {
					b.Fatalf("complete: %v, lost %d", err, len(lost))
				}
				claimed += len(rows)
			}
			b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

func token() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
