package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/sluicetype"
)

// slow is a rate that refills nothing within a test: a bucket gives its
// burst and then nothing.
const slow = 0.001

// exerciseClaimRates checks the start rates of types and partitions that
// the limited claim takes from their token buckets in its own transaction
// (driver.RunningCaps TypeRates, PartitionRate).
func exerciseClaimRates(t *testing.T, open Opener) {
	t.Run("TypeRate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insertMailAndPDF(10)
		lim := &driver.RunningCaps{TypeRates: map[string]driver.Rate{"mail": {PerSecond: slow, Burst: 4}}}
		claim := func(queue, typ string) []sluicetype.JobRow {
			return b.claim(driver.ClaimParams{Queue: queue, Types: typeList(typ), Limit: 100, Lease: time.Minute, Token: newToken(), Limits: lim})
		}
		// A mail job starts in the other queue: it takes the type's token.
		require.Len(t, b.claim(driver.ClaimParams{Queue: "other", Limit: 1, Lease: time.Minute, Token: newToken(), Limits: lim}), 1)
		got := claim("default", "")
		require.Len(t, got, 13, "3 more mail jobs and all 10 pdf jobs")
		require.Equal(t, 4, b.running("*", "mail"))
		// A type out of tokens does not hide what is queued behind it.
		b.insert(newJob("pdf"))
		got = claim("default", "")
		require.Len(t, got, 1)
		require.Equal(t, "pdf", got[0].Type)
		require.Empty(t, claim("other", "mail"))
		require.Empty(t, claim("default", ""))

		list, err := b.d.ListRateBuckets(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, driver.TypeBucket("mail"), list[0].Name)
		require.Less(t, list[0].Tokens, 1.0)
	})

	t.Run("PartitionRate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, part := range []string{"A", "B", "C"} {
			for range 8 {
				b.insertOne(inPart("t", part))
			}
		}
		lim := &driver.RunningCaps{PartitionRate: driver.Rate{PerSecond: slow, Burst: 2},
			PartitionRates: map[string]driver.Rate{"B": {PerSecond: slow, Burst: 5}}}
		claim := func() []sluicetype.JobRow {
			return b.claim(driver.ClaimParams{Queue: "default", Limit: 100, Lease: time.Minute, Token: newToken(), Fair: true, Limits: lim})
		}
		require.Len(t, claim(), 9)
		list, err := b.d.ListRateBuckets(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 3)
		require.Equal(t, 2, b.running("A", ""))
		require.Equal(t, 5, b.running("B", ""))
		require.Equal(t, 2, b.running("C", ""))
		require.Empty(t, claim(), "every partition is out of tokens")
		// Finished jobs give no token back: the rate counts starts.
		done, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Status: sluicetype.StatusProcessing, Limit: 100})
		require.NoError(t, err)
		for _, j := range done {
			require.Empty(t, b.complete(driver.Completion{ID: j.ID, Token: j.LockedBy, Status: sluicetype.StatusSuccess}))
		}
		require.Empty(t, claim())
		// A partition that had no jobs yet has its own full bucket.
		b.insert(inPart("t", "D"), inPart("t", "D"), inPart("t", "D"))
		require.Equal(t, "D,D", partsOf(claim()))

		list, err = b.d.ListRateBuckets(b.ctx)
		require.NoError(t, err)
		var names []string
		for _, r := range list {
			names = append(names, r.Name)
		}
		require.Equal(t, []string{driver.PartitionBucket("default", "A"), driver.PartitionBucket("default", "B"),
			driver.PartitionBucket("default", "C"), driver.PartitionBucket("default", "D")}, names)

		// The longest queue and partition names fit a bucket's name.
		long := inPart("t", strings.Repeat("p", sluicetype.MaxPartitionLen))
		long.Queue = strings.Repeat("q", sluicetype.MaxQueueLen)
		b.insert(long, long)
		got := b.claim(driver.ClaimParams{Queue: long.Queue, Limit: 100, Lease: time.Minute, Token: newToken(), Fair: true, Limits: lim})
		require.Len(t, got, 2)
		list, err = b.d.ListRateBuckets(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 5)
		require.Equal(t, driver.PartitionBucket(long.Queue, long.Partition), list[4].Name)
	})

	t.Run("RatesHoldUnderConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insertSpread()
		lim := &driver.RunningCaps{PartitionRate: driver.Rate{PerSecond: slow, Burst: 3},
			PartitionRates: map[string]driver.Rate{"p0": {PerSecond: slow, Burst: 5}},
			TypeRates:      map[string]driver.Rate{"t1": {PerSecond: slow, Burst: 4}}}
		// Claimers on separate connections race; the buckets must give
		// each token once.
		raceFairClaims(t, b, lim)
		require.Equal(t, 5, b.running("p0", ""))
		for _, p := range []string{"p1", "p2", "p3", "p4"} {
			require.Equal(t, 3, b.running(p, ""), "partition %s", p)
		}
		require.LessOrEqual(t, b.running("*", "t1"), 4)
	})

	t.Run("RatesRefillWithDatabaseTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var ps []driver.InsertJob
		for i := range 300 {
			ps = append(ps, newJob("t"))
			j := inPart("u", fmt.Sprintf("p%d", i%2))
			j.Queue = "fair"
			ps = append(ps, j)
		}
		b.insert(ps...)
		// Claimers racing on refilling buckets start no more than the
		// burst plus the refill over the time they claimed for: a claim
		// that waited for the lock must not credit a span twice.
		const rate, burst = 20.0, 2
		typeLim := &driver.RunningCaps{TypeRates: map[string]driver.Rate{"t": {PerSecond: rate, Burst: burst}}}
		partLim := &driver.RunningCaps{PartitionRate: driver.Rate{PerSecond: rate, Burst: burst}}
		start := b.now()
		racetest.Run(t, 8, func(i int) error {
			p := driver.ClaimParams{Queue: "default", Limit: 5, Lease: time.Minute, Limits: typeLim}
			if i%2 == 1 {
				p = driver.ClaimParams{Queue: "fair", Limit: 5, Lease: time.Minute, Fair: true, Limits: partLim}
			}
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				p.Token = newToken()
				if _, err := b.d.Claim(b.ctx, p); err != nil {
					return err
				}
			}
			return nil
		})
		elapsed := b.now().Sub(start)
		bound := burst + rate*elapsed.Seconds()
		for _, c := range []struct{ part, typ string }{{"*", "t"}, {"p0", "u"}, {"p1", "u"}} {
			n := b.running(c.part, c.typ)
			require.LessOrEqual(t, float64(n), bound, "%s %s started in %s", c.part, c.typ, elapsed)
			// That it refilled at all; how often is the machine's speed
			// (a loaded CI run through PgBouncer claimed 12 where 30
			// were due), and the upper bound above is the rule.
			require.Greater(t, n, burst, "%s %s: the bucket refilled while they claimed", c.part, c.typ)
		}
	})
}
