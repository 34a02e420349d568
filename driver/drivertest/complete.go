package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseComplete(t *testing.T, open Opener) {
	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("ok")
		id := b.insertOne(p)
		claimed, tok := b.claimOne(p, id, time.Minute)

		before := b.now()
		lost := b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr(`{"done": true}`)})
		after := b.now()
		require.Empty(t, lost)

		j := b.get(id)
		require.Equal(t, sluicetype.StatusSuccess, j.Status)
		require.NotNil(t, j.FinishedAt)
		requireBetween(t, *j.FinishedAt, before, after, "finished_at")
		requireBetween(t, j.UpdatedAt, before, after, "updated_at")
		require.Empty(t, j.LockedBy, "lease token left on a finished job")
		require.Nil(t, j.LockedUntil)
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, `{"done": true}`, j.Result)
		require.Empty(t, j.LastError)
		require.True(t, claimed.NextRunAt.Equal(j.NextRunAt))
	})

	t.Run("RetryOutcome", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("flaky")
		id, tok := b.claimNew(p)

		before := b.now()
		lost := b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Delay: 90 * time.Second, Error: strPtr("connection refused")})
		after := b.now()
		require.Empty(t, lost)

		j := b.get(id)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 1, j.Attempts, "a retry keeps the attempt it used")
		require.Equal(t, "connection refused", j.LastError)
		requireBetween(t, j.NextRunAt, before.Add(90*time.Second), after.Add(90*time.Second), "next_run_at")
		require.Nil(t, j.FinishedAt)
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Types: []string{"flaky"}, Limit: 10, Lease: time.Minute, Token: newToken()}),
			"a job retried with a delay was claimable at once")
	})

	t.Run("RetryWithoutDelayIsDueAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("again")
		id, tok := b.claimNew(p)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Error: strPtr("e1")}))
		j, tok2 := b.claimOne(p, id, time.Minute)
		require.Equal(t, 2, j.Attempts)
		require.NotEqual(t, tok, tok2)
		require.Equal(t, tok2, j.LockedBy)
		require.Equal(t, "e1", j.LastError, "claim cleared last_error")
	})

	t.Run("Failed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("doomed")
		id, tok := b.claimNew(p)
		before := b.now()
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("400 bad request")}))
		after := b.now()

		j := b.get(id)
		require.Equal(t, sluicetype.StatusFailed, j.Status)
		require.NotNil(t, j.FinishedAt)
		requireBetween(t, *j.FinishedAt, before, after, "finished_at")
		require.Equal(t, "400 bad request", j.LastError)
		require.Equal(t, 1, j.Attempts)
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
	})

	t.Run("SnoozeRefundsAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("snoozy")
		id, tok := b.claimNew(p)
		require.Equal(t, 1, b.get(id).Attempts)

		before := b.now()
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Delay: time.Hour, Refund: true}))
		after := b.now()
		j := b.get(id)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Attempts, "snooze did not give the attempt back")
		requireBetween(t, j.NextRunAt, before.Add(time.Hour), after.Add(time.Hour), "next_run_at")
		require.Empty(t, j.LastError, "snooze without an error wrote last_error")
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.FinishedAt)
	})

	t.Run("ErrorAndResultKeptWhenNil", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("keep")
		id, tok := b.claimNew(p)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Error: strPtr("first failure"), Result: strPtr("partial")}))
		_, tok = b.claimOne(p, id, time.Minute)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
		j := b.get(id)
		require.Equal(t, "first failure", j.LastError, "nil Error must leave last_error alone")
		require.Equal(t, "partial", j.Result, "nil Result must leave result alone")
		require.Equal(t, 2, j.Attempts)
	})

	t.Run("BatchOfMixedOutcomes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 5 {
			b.insertOne(newJob("mixed"))
		}
		tok := newToken()
		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 5, Lease: time.Minute, Token: tok})
		require.Len(t, jobs, 5)
		ok, retry, fail, snooze, stale := jobs[0].ID, jobs[1].ID, jobs[2].ID, jobs[3].ID, jobs[4].ID
		lost := b.complete(
			driver.Completion{ID: ok, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr("r-ok")},
			driver.Completion{ID: retry, Token: tok, Status: sluicetype.StatusPending, Delay: time.Hour, Error: strPtr("e-retry")},
			driver.Completion{ID: stale, Token: "not-the-token", Status: sluicetype.StatusSuccess},
			driver.Completion{ID: fail, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("e-fail")},
			driver.Completion{ID: snooze, Token: tok, Status: sluicetype.StatusPending, Delay: time.Hour, Refund: true},
		)
		require.Equal(t, []int64{stale}, lost)

		j := b.get(ok)
		require.Equal(t, sluicetype.StatusSuccess, j.Status)
		require.Equal(t, "r-ok", j.Result)
		j = b.get(retry)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 1, j.Attempts)
		require.Equal(t, "e-retry", j.LastError)
		j = b.get(fail)
		require.Equal(t, sluicetype.StatusFailed, j.Status)
		require.Equal(t, "e-fail", j.LastError)
		require.Empty(t, j.Result, "another completion's result leaked into this row")
		j = b.get(snooze)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Attempts)
		require.Empty(t, j.LastError, "another completion's error leaked into this row")
		j = b.get(stale)
		require.Equal(t, sluicetype.StatusProcessing, j.Status)
		require.Equal(t, tok, j.LockedBy)
	})

	t.Run("SecondCompletionIsLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("twice")
		id, tok := b.claimNew(p)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr("first")}))
		finished := b.get(id)
		// The same token cannot finish the job again: the lease ended with
		// the first outcome.
		require.Equal(t, []int64{id}, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("late")}))
		require.Equal(t, finished, b.get(id))
		// Nor can anyone complete a job that was never claimed.
		pending := b.insertOne(newJob("never-claimed"))
		require.Equal(t, []int64{pending}, b.complete(driver.Completion{ID: pending, Token: "", Status: sluicetype.StatusSuccess}))
		require.Equal(t, sluicetype.StatusPending, b.get(pending).Status)
		// An unknown id is lost too, not an error.
		require.Equal(t, []int64{987654321}, b.complete(driver.Completion{ID: 987654321, Token: tok, Status: sluicetype.StatusSuccess}))
	})

	t.Run("TruncatesErrorAndResult", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("big")
		id, tok := b.claimNew(p)
		// The end of an error output is the useful part, so the tail is kept.
		longErr := "HEAD" + strings.Repeat("e", 3*sluicetype.MaxErrorLen) + "TAIL"
		longRes := "HEAD" + strings.Repeat("r", 2*sluicetype.MaxResultLen) + "TAIL"
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: &longErr, Result: &longRes}))
		j := b.get(id)
		require.Len(t, j.LastError, sluicetype.MaxErrorLen)
		require.True(t, strings.HasSuffix(j.LastError, "TAIL"))
		require.Len(t, j.Result, sluicetype.MaxResultLen)
		require.True(t, strings.HasSuffix(j.Result, "TAIL"))
	})

	t.Run("LargeBatchWithStale", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Big enough for drivers that cut completions into chunks; the stale
		// ones sit in different chunks.
		const n = 1200
		b.insert(newJobs("bulk-done", n)...)
		tok := newToken()
		var held []sluicetype.JobRow
		for len(held) < n {
			got := b.claim(driver.ClaimParams{Queue: "default", Limit: 500, Lease: time.Minute, Token: tok})
			require.NotEmpty(t, got)
			held = append(held, got...)
		}
		stale := map[int64]bool{held[7].ID: true, held[640].ID: true, held[1199].ID: true}
		hb := driver.HeartbeatParams{Token: tok, Lease: time.Hour}
		cs := make([]driver.Completion, n)
		for i, j := range held {
			c := driver.Completion{ID: j.ID, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr(fmt.Sprintf("r%d", j.ID))}
			if stale[j.ID] {
				c.Token = "stale"
			}
			if i%2 == 1 {
				c.Status, c.Delay, c.Error = sluicetype.StatusPending, time.Hour, strPtr(fmt.Sprintf("e%d", j.ID))
			}
			cs[i] = c
			hb.IDs = append(hb.IDs, j.ID)
		}

		// The heartbeat sees every lease held; one with a wrong token none.
		lost, err := b.d.Heartbeat(b.ctx, hb)
		require.NoError(t, err)
		require.Empty(t, lost)
		lost = b.complete(cs...)
		require.ElementsMatch(t, []int64{held[7].ID, held[640].ID, held[1199].ID}, lost)

		for i, j := range b.listAll(sluicetype.ListParams{}) {
			switch {
			case stale[j.ID]:
				require.Equal(t, sluicetype.StatusProcessing, j.Status, "stale job %d", j.ID)
			case j.Status == sluicetype.StatusSuccess:
				require.Equal(t, fmt.Sprintf("r%d", j.ID), j.Result, "job %d got another job's result", j.ID)
			default:
				require.Equal(t, sluicetype.StatusPending, j.Status, "row %d", i)
				require.Equal(t, fmt.Sprintf("e%d", j.ID), j.LastError, "job %d got another job's error", j.ID)
			}
		}
		// The completed ones are lost to a heartbeat now, the stale ones not.
		lost, err = b.d.Heartbeat(b.ctx, hb)
		require.NoError(t, err)
		require.Len(t, lost, n-3)
		require.NotContains(t, lost, held[640].ID)
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		lost, err := b.d.Complete(b.ctx, driver.CompleteParams{Completions: nil})
		require.NoError(t, err)
		require.Empty(t, lost)
	})
}
