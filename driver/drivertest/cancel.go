package drivertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseCancel holds the cancel of a running job to the fencing of every
// completion: it ends the attempt held with the job's current token, and
// of it and the attempt's own outcome exactly one is applied.
func exerciseCancel(t *testing.T, open Opener) {
	const reason = "cancelled by an operator: ops via cli"

	t.Run("RunningJobEndsItsAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("cancel-running")
		id, tok := b.claimNew(p)
		other, _ := b.claimNew(newJob("still-running"))

		before := b.now()
		running, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
		after := b.now()
		require.NoError(t, err)
		require.True(t, running, "a running job's cancel reports it was running")
		j := b.get(id)
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
		require.NotNil(t, j.FinishedAt)
		requireBetween(t, *j.FinishedAt, before, after, "finished_at")
		require.Equal(t, reason, j.LastError)
		require.Equal(t, 1, j.Attempts, "the attempt it ended stays counted")
		require.Len(t, j.History, 1)
		require.Equal(t, sluicetype.OutcomeCancelled, j.History[0].Outcome)
		require.Equal(t, 1, j.History[0].Number)
		require.Equal(t, reason, j.History[0].Error)

		// The worker learns it, and nothing it does afterwards lands.
		got, err := b.d.Cancelled(b.ctx, []int64{other, id, unknownID})
		require.NoError(t, err)
		require.Equal(t, []int64{id}, got)
		lost, err := b.d.Heartbeat(b.ctx, driver.HeartbeatParams{Token: tok, IDs: []int64{id}, Lease: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []int64{id}, lost, "a heartbeat after the cancel")
		for _, c := range []driver.Completion{
			{Status: sluicetype.StatusSuccess, Result: strPtr("late result")},
			{Status: sluicetype.StatusFailed, Error: strPtr("late failure")},
			{Status: sluicetype.StatusPending, Delay: time.Hour, Error: strPtr("late retry")},
		} {
			c.ID, c.Token = id, tok
			require.Equal(t, []int64{id}, b.complete(c), "a %s reported after the cancel was applied", c.Status)
			require.Equal(t, j, b.get(id), "a %s reported after the cancel changed the row", c.Status)
		}
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		held, err := b.d.CompleteTx(b.ctx, driver.CompleteTxParams{Tx: tx,
			Completion: driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}})
		require.NoError(t, err)
		require.False(t, held, "a transactional success after the cancel was applied")
		require.NoError(t, tx.Rollback())
		require.Equal(t, j, b.get(id))
		// Nor does a second cancel.
		_, err = b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
		requireWrongState(t, err)
		require.Equal(t, sluicetype.StatusProcessing, b.get(other).Status, "the other running job was touched")
	})

	t.Run("OutcomeFirstWins", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A success written before the cancel stands.
		id, tok := b.claimNew(newJob("success-first"))
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr("done")}))
		_, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
		requireWrongState(t, err)
		require.Equal(t, sluicetype.StatusSuccess, b.get(id).Status)
		// A retry or a failure written first leaves a pending or failed
		// job: the cancel ends that one, as it would have anyway.
		for _, status := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusFailed} {
			id, tok := b.claimNew(newJob("first-" + string(status)))
			require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: status, Delay: time.Hour, Error: strPtr("boom")}))
			running, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
			require.NoError(t, err)
			require.False(t, running)
			j := b.get(id)
			require.Equal(t, sluicetype.StatusCancelled, j.Status)
			require.Equal(t, "boom", j.LastError, "a %s job's cancel keeps its last error", status)
		}
	})

	t.Run("RescueAndCancel", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Cancelled first: the rescue finds nothing to do.
		p := newJob("cancel-then-rescue")
		id := b.insertOne(p)
		b.claimOne(p, id, -time.Second) // its lease has passed already
		_, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
		require.NoError(t, err)
		require.Equal(t, sluicetype.RescueResult{}, b.rescue(100))
		require.Equal(t, sluicetype.StatusCancelled, b.get(id).Status)

		// Rescued first: the cancel ends the pending job, and the stale
		// attempt's token holds nothing.
		p = newJob("rescue-then-cancel")
		id = b.insertOne(p)
		_, tok := b.claimOne(p, id, -time.Second)
		require.Equal(t, sluicetype.RescueResult{Pending: 1}, b.rescue(100))
		running, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
		require.NoError(t, err)
		require.False(t, running)
		require.Equal(t, []int64{id}, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
		require.Equal(t, sluicetype.StatusCancelled, b.get(id).Status)
	})

	t.Run("ReclaimedJobCancelsTheLiveAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("cancel-reclaimed"))
		running, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: held.ID, Reason: reason})
		require.NoError(t, err)
		require.True(t, running)
		for _, tok := range []string{oldTok, newTok} {
			require.Equal(t, []int64{held.ID}, b.complete(driver.Completion{ID: held.ID, Token: tok, Status: sluicetype.StatusSuccess}))
		}
		j := b.get(held.ID)
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Equal(t, 2, j.History[len(j.History)-1].Number, "the entry names the attempt it ended")
	})

	// Each job is cancelled while its attempt reports an outcome at the
	// same moment: exactly one of the two is applied, and the row says
	// which.
	t.Run("RaceWithCompletion", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const jobs = 20
		outcomes := []sluicetype.Status{sluicetype.StatusSuccess, sluicetype.StatusFailed, sluicetype.StatusPending}
		type result struct {
			id       int64
			want     sluicetype.Status
			cancel   error
			running  bool
			lost     bool
			complete error
		}
		results := make([]result, jobs)
		var wg sync.WaitGroup
		for i := range jobs {
			id, tok := b.claimNew(newJob(fmt.Sprintf("race-%d", i)))
			results[i] = result{id: id, want: outcomes[i%len(outcomes)]}
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				results[i].running, results[i].cancel = b.d.Cancel(b.ctx, driver.CancelParams{ID: id, Reason: reason})
			}()
			go func() {
				defer wg.Done()
				<-start
				lost, err := b.d.Complete(b.ctx, driver.CompleteParams{Completions: []driver.Completion{
					{ID: id, Token: tok, Status: results[i].want, Delay: time.Hour, Error: strPtr("reported")}}})
				results[i].lost, results[i].complete = len(lost) == 1, err
			}()
			close(start)
		}
		wg.Wait()
		cancelWon := 0
		for _, r := range results {
			require.NoError(t, r.complete, "job %d", r.id)
			j := b.get(r.id)
			switch {
			case !r.lost && r.want != sluicetype.StatusSuccess:
				// The retry or failure landed first; the cancel then
				// ended the pending or failed job, keeping its error.
				require.NoError(t, r.cancel, "job %d", r.id)
				require.False(t, r.running, "job %d", r.id)
				require.Equal(t, sluicetype.StatusCancelled, j.Status, "job %d", r.id)
				require.Equal(t, "reported", j.LastError, "job %d", r.id)
			case !r.lost:
				requireWrongState(t, r.cancel)
				require.Equal(t, r.want, j.Status, "job %d: the outcome won, the row must show it", r.id)
			default:
				cancelWon++
				require.NoError(t, r.cancel, "job %d", r.id)
				require.True(t, r.running, "job %d", r.id)
				require.Equal(t, sluicetype.StatusCancelled, j.Status, "job %d", r.id)
				require.Equal(t, reason, j.LastError, "job %d", r.id)
			}
			if r.cancel != nil && !errors.Is(r.cancel, sluicetype.ErrWrongState) {
				t.Fatalf("job %d: cancel failed: %v", r.id, r.cancel)
			}
		}
		t.Logf("%d of %d cancels reached the row before the attempt's outcome", cancelWon, jobs)
	})
}
