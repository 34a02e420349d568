package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseDeadline: a job not started by its deadline is never started
// (every claim flavour and the probe skip it) and the sweep cancels it
// with the reason; a job whose deadline is ahead runs as any other. The
// deadlines are set from the database clock, so nothing waits.
func exerciseDeadline(t *testing.T, open Opener) {
	// claimFlavours are the claims a job past its deadline must escape:
	// the plain claim (a merge of the jobs with and without a partition),
	// the fair claim and the claim with limits.
	claimFlavours := []struct {
		name string
		p    driver.ClaimParams
	}{
		{"plain", driver.ClaimParams{}},
		{"fair", driver.ClaimParams{Fair: true}},
		{"limited", driver.ClaimParams{Limits: &driver.RunningCaps{Queue: 100}}},
	}
	for _, f := range claimFlavours {
		t.Run("ClaimSkipsPastDeadline/"+f.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, open)
			now := b.now()
			var late, onTime []int64
			for _, part := range []string{"", "tenant-1"} {
				p := newJob("report")
				p.Partition, p.RunAt, p.Deadline = part, now.Add(-time.Hour), now.Add(-time.Second)
				late = append(late, b.insertOne(p))
				p.Deadline = now.Add(time.Hour)
				onTime = append(onTime, b.insertOne(p))
				p.Deadline = time.Time{}
				onTime = append(onTime, b.insertOne(p))
			}
			cp := f.p
			cp.Queue, cp.Limit, cp.Lease, cp.Token = "default", 10, time.Minute, newToken()
			var got []int64
			for _, j := range b.claim(cp) {
				got = append(got, j.ID)
			}
			require.ElementsMatch(t, onTime, got, "claimed: every job but those past their deadline")
			for _, id := range late {
				require.Equal(t, sluicetype.StatusPending, b.get(id).Status, "job %d past its deadline", id)
			}
			cp.Token = newToken()
			require.Empty(t, b.claim(cp), "a second claim finds nothing: the late jobs stay unclaimed")
			if pr, ok := b.d.(driver.Prober); ok {
				runnable, err := pr.Runnable(b.ctx, driver.RunnableParams{Queue: "default"})
				require.NoError(t, err)
				require.False(t, runnable, "the probe agrees with the claim: no runnable job")
			}
		})
	}

	t.Run("SweepCancelsWithReason", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		now := b.now()
		deadline := now.Add(-time.Minute).Truncate(time.Second)
		p := newJob("report")
		p.RunAt, p.Deadline = now.Add(-time.Hour), deadline
		late := b.insertOne(p)
		p.Deadline = now.Add(time.Hour)
		ahead := b.insertOne(p)
		// A job that started in time and is running when its deadline
		// passes is not the sweep's.
		p.Deadline = time.Time{}
		running := b.insertOne(p)
		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: newToken()})
		require.Len(t, jobs, 2)

		n, err := b.d.SweepDeadlines(b.ctx, driver.SweepDeadlinesParams{Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		j := b.get(late)
		reason := "deadline " + deadline.UTC().Format(time.RFC3339) + " passed before the job started"
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Equal(t, reason, j.LastError)
		require.Equal(t, 0, j.Attempts)
		require.NotNil(t, j.FinishedAt)
		require.NotNil(t, j.Deadline)
		require.WithinDuration(t, deadline, *j.Deadline, clockSlack)
		require.NotEmpty(t, j.History)
		last := j.History[len(j.History)-1]
		require.Equal(t, sluicetype.OutcomeCancelled, last.Outcome)
		require.Equal(t, reason, last.Error)
		require.Equal(t, 0, last.Number)

		require.Equal(t, sluicetype.StatusProcessing, b.get(ahead).Status, "the job ahead of its deadline was claimed")
		require.Equal(t, sluicetype.StatusProcessing, b.get(running).Status)
		n, err = b.d.SweepDeadlines(b.ctx, driver.SweepDeadlinesParams{Limit: 10})
		require.NoError(t, err)
		require.Zero(t, n, "a second sweep finds nothing")

		// An operator's retry runs it: the passed deadline is dropped.
		n, err = b.d.Retry(b.ctx, driver.RetryParams{ID: late})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		j = b.get(late)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Nil(t, j.Deadline, "a retry drops a deadline already passed")
		b.claimOne(p, late, time.Minute)
	})

	t.Run("PrefetchedPastDeadlineNeverStarts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		table := b.jobsTable()
		p := newJob("report")
		p.RunAt, p.Deadline = b.now().Add(-time.Hour), b.now().Add(time.Hour)
		ids := b.insert(p, p)
		tok := newToken()
		require.Len(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: tok}), 2)
		late, inTime := ids[0].ID, ids[1].ID
		require.NoError(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{Token: tok, IDs: []int64{late, inTime}}))
		// The first job's deadline passes while it waits in the worker:
		// moved to its run_at, an hour ago, rather than waited for.
		_, err := b.d.DB().ExecContext(b.ctx, fmt.Sprintf("UPDATE %s SET deadline = next_run_at WHERE id = %d", table, late))
		require.NoError(t, err)

		held, err := b.d.Started(b.ctx, driver.StartedParams{Token: tok, ID: late})
		require.NoError(t, err)
		require.False(t, held, "a job past its deadline does not start")
		j := b.get(late)
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Contains(t, j.LastError, "passed before the job started")
		require.Equal(t, 0, j.Attempts, "the attempt it never ran is given back")
		require.Empty(t, j.LockedBy)
		require.Equal(t, sluicetype.OutcomeCancelled, j.History[len(j.History)-1].Outcome)

		held, err = b.d.Started(b.ctx, driver.StartedParams{Token: tok, ID: inTime})
		require.NoError(t, err)
		require.True(t, held, "a job within its deadline starts")
	})

	t.Run("FutureDeadlineRunsNormally", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		deadline := b.now().Add(time.Hour)
		p := newJob("report")
		p.Deadline = deadline
		id := b.insertOne(p)
		n, err := b.d.SweepDeadlines(b.ctx, driver.SweepDeadlinesParams{Limit: 10})
		require.NoError(t, err)
		require.Zero(t, n)
		j, tok := b.claimOne(p, id, time.Minute)
		require.NotNil(t, j.Deadline)
		require.WithinDuration(t, deadline, *j.Deadline, clockSlack)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
		require.Equal(t, sluicetype.StatusSuccess, b.get(id).Status)
	})

	t.Run("DeadlineAfterDue", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		runAt := b.now().Add(time.Hour).Truncate(time.Millisecond)
		p := newJob("report")
		p.RunAt, p.DeadlineAfter = runAt, 10*time.Minute
		j := b.get(b.insertOne(p))
		require.NotNil(t, j.Deadline)
		require.WithinDuration(t, runAt.Add(10*time.Minute), *j.Deadline, clockSlack, "run_at plus the type's deadline")

		// Due after a delay: the database clock plus the delay plus the
		// deadline.
		p.RunAt, p.Delay = time.Time{}, time.Minute
		before := b.now()
		j = b.get(b.insertOne(p))
		after := b.now()
		require.NotNil(t, j.Deadline)
		requireBetween(t, *j.Deadline, before.Add(11*time.Minute), after.Add(11*time.Minute), "deadline")

		// A job's own deadline wins.
		own := before.Add(time.Hour).Truncate(time.Millisecond)
		p.Deadline = own
		j = b.get(b.insertOne(p))
		require.WithinDuration(t, own, *j.Deadline, clockSlack)

		p = newJob("report")
		require.Nil(t, b.get(b.insertOne(p)).Deadline, "no deadline by default")
	})
}
