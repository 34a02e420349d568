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

// inPart is newJob in a partition.
func inPart(typ, part string) driver.InsertJob {
	p := newJob(typ)
	p.Partition = part
	return p
}

// partsOf lists the partitions of jobs in order.
func partsOf(jobs []sluicetype.JobRow) string {
	var s []string
	for _, j := range jobs {
		s = append(s, j.Partition)
	}
	return strings.Join(s, ",")
}

// running counts the processing jobs of the given partition and type ("" any).
func (b *bundle) running(part, typ string) int {
	b.t.Helper()
	jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Status: sluicetype.StatusProcessing, Type: typ, Limit: 1000})
	require.NoError(b.t, err)
	n := 0
	for _, j := range jobs {
		if part == "*" || j.Partition == part {
			n++
		}
	}
	return n
}

func exerciseFair(t *testing.T, open Opener) {
	t.Run("PartitionStored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		id := b.insertOne(inPart("t", "tenant-7@acme.io"))
		require.Equal(t, "tenant-7@acme.io", b.get(id).Partition)
		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: newToken(), Fair: true})
		require.Len(t, jobs, 1)
		require.Equal(t, "tenant-7@acme.io", jobs[0].Partition)
		require.Equal(t, jobs[0], *b.get(id), "what a fair claim returns is what is stored")
		// Unpartitioned jobs are the partition "".
		require.Equal(t, "", b.get(b.insertOne(newJob("t"))).Partition)
	})

	t.Run("RoundRobin", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A's whole backlog is older than B's and C's.
		for _, part := range []string{"A", "B", "C"} {
			for range 5 {
				b.insertOne(inPart("t", part))
			}
		}
		var order []sluicetype.JobRow
		for range 8 {
			order = append(order, b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: newToken(), Fair: true})...)
		}
		require.Equal(t, "A,B,C,A,B,C,A,B,C,A,B,C,A,B,C", partsOf(order))
		// Without Fair the same backlog goes in global order.
		b2 := setup(t, open)
		for _, part := range []string{"A", "B", "C"} {
			for range 5 {
				b2.insertOne(inPart("t", part))
			}
		}
		got := b2.claim(driver.ClaimParams{Queue: "default", Limit: 6, Lease: time.Minute, Token: newToken()})
		require.Equal(t, "A,A,A,A,A,B", partsOf(got))
	})

	t.Run("LargeClaimSharesSlots", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, part := range []string{"A", "B", "C", ""} {
			for range 10 {
				b.insertOne(inPart("t", part))
			}
		}
		// 10 slots over 4 partitions: each gets two or three, taken in turns.
		got := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken(), Fair: true})
		require.Equal(t, "A,B,C,,A,B,C,,A,B", partsOf(got))
		// The next claim goes on after B, the last partition served.
		got = b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: newToken(), Fair: true})
		require.Equal(t, "C,", partsOf(got))
	})

	t.Run("PriorityWithinPartition", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		low := inPart("low", "A")
		low.Priority = 5
		urgent := inPart("urgent", "A")
		urgent.Priority = -5
		b.insert(low, low, urgent)
		other := inPart("other", "B")
		other.Priority = 100
		b.insert(other, other)
		var got []string
		for range 5 {
			jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: newToken(), Fair: true})
			require.Len(t, jobs, 1)
			got = append(got, jobs[0].Partition+":"+jobs[0].Type)
		}
		// Priority orders a partition's own jobs; it never lets A's jobs
		// skip B's turn.
		require.Equal(t, []string{"A:urgent", "B:other", "A:low", "B:other", "A:low"}, got)
	})

	t.Run("FairByType", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insert(inPart("x", "A"), inPart("y", "A"), inPart("y", "B"), inPart("x", "B"))
		got := b.claim(driver.ClaimParams{Queue: "default", Types: []string{"y"}, Limit: 5, Lease: time.Minute, Token: newToken(), Fair: true})
		require.Equal(t, "A,B", partsOf(got))
		for _, j := range got {
			require.Equal(t, "y", j.Type)
		}
	})

	t.Run("ManyPartitions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// More partitions than one claim visits: turns go on across claims,
		// and every partition is served once before any is served twice.
		n := driver.MaxFairPartitions + 36
		var ps []driver.InsertJob
		for i := range n {
			ps = append(ps, inPart("t", fmt.Sprintf("p%03d", i)), inPart("t", fmt.Sprintf("p%03d", i)))
		}
		b.insert(ps...)
		seen := map[string]int{}
		for served := 0; served < n; {
			jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 7, Lease: time.Minute, Token: newToken(), Fair: true})
			require.NotEmpty(t, jobs)
			for _, j := range jobs {
				if len(seen) < n {
					require.Zero(t, seen[j.Partition], "partition %s served twice before all were served once", j.Partition)
				}
				seen[j.Partition]++
			}
			served += len(jobs)
		}
	})

	t.Run("PartitionCap", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, part := range []string{"A", "B", "C"} {
			for range 6 {
				b.insertOne(inPart("t", part))
			}
		}
		lim := &driver.RunningCaps{Partition: 2, Partitions: map[string]int{"B": 4}}
		claim := func(n int) []sluicetype.JobRow {
			return b.claim(driver.ClaimParams{Queue: "default", Limit: n, Lease: time.Minute, Token: newToken(), Fair: true, Limits: lim})
		}
		got := claim(100)
		require.Len(t, got, 8)
		require.Equal(t, 2, b.running("A", ""))
		require.Equal(t, 4, b.running("B", ""))
		require.Equal(t, 2, b.running("C", ""))
		require.Empty(t, claim(100), "every partition is at its cap")
		// A finished job frees its partition's slot, and only that one.
		var a sluicetype.JobRow
		for _, j := range got {
			if j.Partition == "A" {
				a = j
			}
		}
		require.Empty(t, b.complete(driver.Completion{ID: a.ID, Token: a.LockedBy, Status: sluicetype.StatusSuccess}))
		got = claim(100)
		require.Equal(t, "A", partsOf(got))
	})

	t.Run("QueueAndTypeCaps", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insertMailAndPDF(5)
		lim := &driver.RunningCaps{Types: map[string]int{"mail": 3}}
		// A mail job runs in the other queue: the type cap counts it.
		require.Len(t, b.claim(driver.ClaimParams{Queue: "other", Limit: 1, Lease: time.Minute, Token: newToken(), Limits: lim}), 1)
		got := b.claim(driver.ClaimParams{Queue: "default", Limit: 100, Lease: time.Minute, Token: newToken(), Limits: lim})
		require.Len(t, got, 7, "2 more mail jobs and all 5 pdf jobs")
		require.Equal(t, 3, b.running("*", "mail"))
		// Mail at its cap does not hide what is queued behind it.
		b.insert(newJob("mail"), newJob("pdf"))
		got = b.claim(driver.ClaimParams{Queue: "default", Limit: 100, Lease: time.Minute, Token: newToken(), Limits: lim})
		require.Len(t, got, 1)
		require.Equal(t, "pdf", got[0].Type)
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "other", Types: []string{"mail"}, Limit: 1, Lease: time.Minute, Token: newToken(), Limits: lim}))

		// A queue cap counts every running job of the queue.
		b3 := setup(t, open)
		for range 10 {
			b3.insert(newJob("t"))
		}
		qlim := &driver.RunningCaps{Queue: 3}
		require.Len(t, b3.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: newToken(), Limits: qlim}), 2)
		require.Len(t, b3.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken(), Limits: qlim}), 1)
		require.Empty(t, b3.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken(), Limits: qlim}))
	})

	t.Run("CapsHoldUnderConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insertSpread()
		lim := &driver.RunningCaps{Partition: 2, Partitions: map[string]int{"p0": 4}, Types: map[string]int{"t1": 3}}
		// Claimers on separate connections race; the database must count
		// each claim's jobs before the next one's.
		raceFairClaims(t, b, lim)
		require.Equal(t, 4, b.running("p0", ""))
		for _, p := range []string{"p1", "p2", "p3", "p4"} {
			require.Equal(t, 2, b.running(p, ""), "partition %s", p)
		}
		require.Equal(t, 3, b.running("*", "t1"))
	})

	t.Run("PartitionStats", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.insert(inPart("t", "A"), inPart("t", "A"), inPart("t", "A"), inPart("t", "B"), newJob("t"))
		other := inPart("t", "Z")
		other.Queue = "other"
		b.insert(other)
		require.Len(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: newToken(), Fair: true}), 1)
		st, err := b.d.PartitionStats(b.ctx, driver.PartitionStatsParams{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []sluicetype.PartitionStats{{Queue: "default", Partition: "A", Pending: 2, Running: 1}, {Queue: "default", Partition: "B", Pending: 1},
			{Queue: "other", Partition: "Z", Pending: 1}}, st)
		st, err = b.d.PartitionStats(b.ctx, driver.PartitionStatsParams{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []sluicetype.PartitionStats{{Queue: "default", Partition: "A", Pending: 2, Running: 1}, {Queue: "other", Partition: "Z", Pending: 1}}, st,
			"the limit is per queue")
	})
}

// insertSpread inserts 200 jobs spread over the types t0 and t1 and the
// partitions p0 to p4, for the caps and rates raced by raceFairClaims.
func (b *bundle) insertSpread() {
	b.t.Helper()
	var ps []driver.InsertJob
	for i := range 200 {
		ps = append(ps, inPart(fmt.Sprintf("t%d", i%2), fmt.Sprintf("p%d", i%5)))
	}
	b.insert(ps...)
}

// raceFairClaims runs 16 claimers on separate connections, 5 fair claims
// of 3 jobs each under lim, at once, and fails on any claim error.
func raceFairClaims(t *testing.T, b *bundle, lim *driver.RunningCaps) {
	t.Helper()
	racetest.Run(t, 16, func(int) error {
		for range 5 {
			if _, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: 3, Lease: time.Minute, Token: newToken(), Fair: true, Limits: lim}); err != nil {
				return err
			}
		}
		return nil
	})
}
