package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseClaim(t *testing.T, open Opener) {
	t.Run("PendingToProcessing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("resize", "img-4", sluicetype.DedupePermanent)
		p.Payload, p.Priority, p.MaxAttempts = []byte(`{"w": 640}`), 2, 3
		id := b.insertOne(p)
		queued := b.get(id)

		tok := newToken()
		before := b.now()
		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: 45 * time.Second, Token: tok})
		after := b.now()
		require.Len(t, jobs, 1)
		j := jobs[0]
		require.Equal(t, id, j.ID)
		require.Equal(t, sluicetype.StatusProcessing, j.Status)
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, 3, j.MaxAttempts)
		require.Equal(t, tok, j.LockedBy)
		require.NotNil(t, j.LockedUntil)
		requireBetween(t, *j.LockedUntil, before.Add(45*time.Second), after.Add(45*time.Second), "locked_until")
		require.Nil(t, j.FinishedAt)
		require.Equal(t, "img-4", j.Key)
		require.Equal(t, 2, j.Priority)
		require.JSONEq(t, `{"w": 640}`, string(j.Payload))
		require.True(t, queued.NextRunAt.Equal(j.NextRunAt), "claim changed next_run_at")
		require.True(t, queued.CreatedAt.Equal(j.CreatedAt), "claim changed created_at")

		// What Claim returns is what is stored.
		require.Equal(t, j, *b.get(id))

		// A claimed job is not claimable again.
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()}))
	})

	t.Run("OrderPriorityRunAtID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		now := b.now()
		at := func(typ string, prio int, age time.Duration) driver.InsertJob {
			p := newJob(typ)
			p.Priority, p.RunAt = prio, now.Add(-age)
			return p
		}
		// Inserted out of order; ids grow down the list.
		res := b.insert(
			at("p2", 2, time.Hour),
			at("p1-new-a", 1, time.Minute),
			at("p0-new", 0, time.Minute),
			at("p1-old", 1, 2*time.Minute),
			at("p1-new-b", 1, time.Minute),
			at("p0-old", 0, 3*time.Minute),
			at("urgent", -1, 0), // priorities may be negative: lower still runs first
		)
		want := []string{"urgent", "p0-old", "p0-new", "p1-old", "p1-new-a", "p1-new-b", "p2"}
		var got []string
		var gotIDs []int64
		for range want {
			jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: newToken()})
			require.Len(t, jobs, 1)
			got = append(got, jobs[0].Type)
			gotIDs = append(gotIDs, jobs[0].ID)
		}
		require.Equal(t, want, got)
		require.Equal(t, []int64{res[6].ID, res[5].ID, res[2].ID, res[3].ID, res[1].ID, res[4].ID, res[0].ID}, gotIDs)
	})

	// A queue that is not fair claims in its global order whatever the
	// jobs' partitions: PostgreSQL and SQLite read the jobs without a
	// partition and those with one from two indexes and merge them, so
	// every batch below needs both.
	t.Run("GlobalOrderAcrossPartitions", func(t *testing.T) {
		t.Parallel()
		claims := map[string]driver.ClaimParams{
			"plain":           {},
			"by type":         {Types: []string{"t"}},
			"limited":         {Limits: &driver.RunningCaps{Queue: 100}},
			"limited by type": {Types: []string{"t"}, Limits: &driver.RunningCaps{Queue: 100}},
		}
		for name, p := range claims {
			b := setup(t, open)
			now := b.now()
			at := func(part string, prio int, age time.Duration) driver.InsertJob {
				j := inPart("t", part)
				j.Priority, j.RunAt = prio, now.Add(-age)
				return j
			}
			res := b.insert(
				at("", 0, time.Minute),
				at("A", 0, 3*time.Minute),
				at("", -1, 0),
				at("B", 0, 2*time.Minute),
				at("", 0, 2*time.Minute), // ties with the one above: id decides
				at("A", 1, time.Hour),
				at("", 1, 2*time.Hour),
				at("B", -1, time.Minute),
				at("", 2, 0),
			)
			id := func(i int) int64 { return res[i].ID }
			want := [][]int64{{id(7), id(2), id(1)}, {id(3), id(4), id(0)}, {id(6), id(5), id(8)}}
			// Another type's jobs, one in each index, come first unless
			// the claim filters them out.
			o1, o2 := at("", -5, 0), at("C", -5, 0)
			o1.Type, o2.Type = "other", "other"
			var others []int64
			for _, r := range b.insert(o1, o2) {
				others = append(others, r.ID)
			}
			if len(p.Types) == 0 {
				want = append([][]int64{others}, want...)
			}
			for i, w := range want {
				p.Queue, p.Limit, p.Lease, p.Token = "default", len(w), time.Minute, newToken()
				require.ElementsMatch(t, w, ids(b.claim(p)), "%s claim, batch %d", name, i)
			}
			require.Empty(t, b.claim(p), "%s claim after the last batch", name)
		}
	})

	t.Run("BatchTakesTheFirstInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var low []int64
		for i := range 6 {
			p := newJob("batch")
			p.Priority = 1 - i%2 // even i: priority 1, odd i: priority 0
			id := b.insertOne(p)
			if p.Priority == 0 {
				low = append(low, id)
			}
		}
		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 3, Lease: time.Minute, Token: newToken()})
		require.ElementsMatch(t, low, ids(jobs))
	})

	t.Run("LimitHonoured", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 5 {
			b.insertOne(newJob("l"))
		}
		seen := map[int64]bool{}
		for _, want := range []int{2, 2, 1, 0} {
			jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: newToken()})
			require.Len(t, jobs, want)
			for _, j := range jobs {
				require.False(t, seen[j.ID], "job %d claimed twice", j.ID)
				seen[j.ID] = true
			}
		}
	})

	// A claim of several types takes the jobs of those types only, on
	// every claim path: plain, fair, and each kind of limit.
	t.Run("TypesFilterEveryPath", func(t *testing.T) {
		t.Parallel()
		paths := map[string]driver.ClaimParams{
			"plain":          {},
			"fair":           {Fair: true},
			"queue cap":      {Limits: &driver.RunningCaps{Queue: 100}},
			"type caps":      {Limits: &driver.RunningCaps{Types: map[string]int{"a": 100, "b": 100}}},
			"partition cap":  {Limits: &driver.RunningCaps{Partition: 100}},
			"type rate":      {Limits: &driver.RunningCaps{TypeRates: map[string]driver.Rate{"c": {PerSecond: 1000, Burst: 1000}}}},
			"partition rate": {Limits: &driver.RunningCaps{PartitionRate: driver.Rate{PerSecond: 1000, Burst: 1000}}},
		}
		for name, p := range paths {
			b := setup(t, open)
			var want, others []int64
			for _, part := range []string{"", "P1", "P2"} {
				for _, typ := range []string{"a", "b", "c"} {
					id := b.insertOne(inPart(typ, part))
					if typ == "b" {
						others = append(others, id)
					} else {
						want = append(want, id)
					}
				}
			}
			p.Queue, p.Types, p.Limit, p.Lease, p.Token = "default", []string{"a", "c"}, 100, time.Minute, newToken()
			require.ElementsMatch(t, want, ids(b.claim(p)), "%s claim of types a and c", name)
			p.Token = newToken()
			require.Empty(t, b.claim(p), "%s claim of types a and c, again", name)
			p.Types, p.Token = nil, newToken()
			require.ElementsMatch(t, others, ids(b.claim(p)), "%s claim of every type", name)
		}
	})
	t.Run("TypeFilter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		a1 := b.insertOne(newJob("a"))
		b1 := b.insertOne(newJob("b"))
		a2 := b.insertOne(newJob("a"))
		b2 := b.insertOne(newJob("b"))

		jobs := b.claim(driver.ClaimParams{Queue: "default", Types: []string{"b"}, Limit: 10, Lease: time.Minute, Token: newToken()})
		require.ElementsMatch(t, []int64{b1, b2}, ids(jobs))
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Types: []string{"b"}, Limit: 10, Lease: time.Minute, Token: newToken()}))
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Types: []string{"c"}, Limit: 10, Lease: time.Minute, Token: newToken()}))
		jobs = b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.ElementsMatch(t, []int64{a1, a2}, ids(jobs))
	})

	t.Run("QueuesAreSeparate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("q")
		p.Queue = "mail"
		mail := b.insertOne(p)
		p.Queue = "sms"
		sms := b.insertOne(p)

		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()}))
		jobs := b.claim(driver.ClaimParams{Queue: "sms", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Equal(t, []int64{sms}, ids(jobs))
		jobs = b.claim(driver.ClaimParams{Queue: "mail", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Equal(t, []int64{mail}, ids(jobs))
		require.Equal(t, "mail", jobs[0].Queue)
	})

	t.Run("FutureRunAtNotClaimable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		now := b.now()
		future := newJob("future")
		future.RunAt = now.Add(time.Hour)
		b.insertOne(future)
		past := newJob("past")
		past.RunAt = now.Add(-time.Second)
		pastID := b.insertOne(past)
		// Due in a moment: not yet due when claimed at once.
		soon := newJob("soon")
		soon.RunAt = now.Add(2 * time.Second)
		soonID := b.insertOne(soon)

		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Equal(t, []int64{pastID}, ids(jobs))

		// Once the database clock passes RunAt it is due. Waiting on the
		// clock (not on a sleep of our own) keeps this honest under load.
		for b.now().Before(soon.RunAt) {
			time.Sleep(100 * time.Millisecond)
		}
		jobs = b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Equal(t, []int64{soonID}, ids(jobs))
	})

	t.Run("EmptyQueue", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		jobs, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: 100, Lease: time.Minute, Token: newToken()})
		require.NoError(t, err)
		require.Empty(t, jobs)
	})
}
