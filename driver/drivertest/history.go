package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseHistory(t *testing.T, open Opener) {
	t.Run("RecordsEachAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("flaky")
		id := b.insertOne(p)

		claimed, tok := b.claimOne(p, id, time.Minute)
		// An attempt takes time: SQLite's clock has millisecond steps, and a
		// completion in the claim's millisecond would record a zero duration.
		time.Sleep(5 * time.Millisecond)
		before := b.now()
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Error: strPtr("HTTP 503"),
			Attempt: &sluicetype.Attempt{Number: 1, Node: "host-a:11", Start: claimed.UpdatedAt, Outcome: sluicetype.OutcomeRetry,
				Error: "HTTP 503", HTTPStatus: 503}}))
		after := b.now()

		claimed2, tok := b.claimOne(p, id, time.Minute)
		zero := 0
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess,
			Attempt: &sluicetype.Attempt{Number: 2, Node: "host-b:22", Start: claimed2.UpdatedAt, Outcome: sluicetype.OutcomeSuccess, ExitCode: &zero}}))

		h := b.get(id).History
		require.Len(t, h, 2)
		first := h[0]
		require.Equal(t, 1, first.Number)
		require.Equal(t, "host-a:11", first.Node)
		require.Equal(t, sluicetype.OutcomeRetry, first.Outcome)
		require.Equal(t, "HTTP 503", first.Error)
		require.Equal(t, 503, first.HTTPStatus)
		require.Nil(t, first.ExitCode)
		require.WithinDuration(t, claimed.UpdatedAt, first.Start, clockSlack, "start is the claim's database time")
		requireBetween(t, first.End, before, after, "end")
		require.Positive(t, first.Duration())

		second := h[1]
		require.Equal(t, 2, second.Number)
		require.Equal(t, "host-b:22", second.Node)
		require.Equal(t, sluicetype.OutcomeSuccess, second.Outcome)
		require.Empty(t, second.Error)
		require.Zero(t, second.HTTPStatus)
		require.NotNil(t, second.ExitCode)
		require.Equal(t, 0, *second.ExitCode)
	})

	t.Run("NoEntryWritesNoHistory", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		j := b.makeJob(sluicetype.StatusSuccess, newJob("smooth"))
		require.Empty(t, j.History)
	})

	t.Run("BoundedToKeep", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Two jobs completed together, so that the batch statement (not
		// only the one-row one) is the one trimming.
		p := newJob("bounded")
		p.MaxAttempts = 20
		jobs := []int64{b.insertOne(p), b.insertOne(p)}
		run := func(n, keep int) {
			t.Helper()
			tok := newToken()
			claimed := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{p.Type}, Limit: 2, Lease: time.Minute, Token: tok})
			require.Len(t, claimed, 2)
			var cs []driver.Completion
			for _, c := range claimed {
				require.Equal(t, n, c.Attempts)
				cs = append(cs, driver.Completion{ID: c.ID, Token: tok, Status: sluicetype.StatusPending, Error: strPtr("again"),
					KeepAttempts: keep, Attempt: &sluicetype.Attempt{Number: c.Attempts, Start: c.UpdatedAt, Outcome: sluicetype.OutcomeRetry, Error: "again"}})
			}
			require.Empty(t, b.complete(cs...))
		}
		numbers := func(id int64) []int {
			var out []int
			for _, a := range b.get(id).History {
				out = append(out, a.Number)
			}
			return out
		}
		for n := 1; n <= 5; n++ {
			run(n, 3)
			for _, id := range jobs {
				require.Len(t, numbers(id), min(n, 3), "history after attempt %d, keeping 3", n)
			}
		}
		for _, id := range jobs {
			require.Equal(t, []int{3, 4, 5}, numbers(id), "the last 3 attempts, oldest first")
		}
		// A smaller limit shrinks the history by one more per attempt.
		run(6, 1)
		for _, id := range jobs {
			require.Equal(t, []int{5, 6}, numbers(id))
		}
		run(7, 1)
		for _, id := range jobs {
			require.Equal(t, []int{7}, numbers(id))
		}
	})

	t.Run("BatchWithAndWithoutEntries", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("mixed")
		with, without := b.insertOne(p), b.insertOne(p)
		complete := func(entry bool) {
			t.Helper()
			tok := newToken()
			claimed := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{p.Type}, Limit: 2, Lease: time.Minute, Token: tok})
			require.Len(t, claimed, 2)
			var cs []driver.Completion
			for _, c := range claimed {
				cs = append(cs, driver.Completion{ID: c.ID, Token: tok, Status: sluicetype.StatusPending})
				if entry && c.ID == with {
					cs[len(cs)-1].Attempt = &sluicetype.Attempt{Number: c.Attempts, Outcome: sluicetype.OutcomeRetry}
				}
			}
			require.Empty(t, b.complete(cs...))
		}
		// One entry in the batch: only its job gets history.
		complete(true)
		require.Len(t, b.get(with).History, 1)
		require.Empty(t, b.get(without).History)
		// No entry in the batch: histories stay as they are.
		complete(false)
		require.Len(t, b.get(with).History, 1)
		require.Empty(t, b.get(without).History)
	})

	t.Run("ErrorCutToItsEnd", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("loud")
		id := b.insertOne(p)
		claimed, tok := b.claimOne(p, id, time.Minute)
		long := strings.Repeat("x", 3*driver.MaxAttemptErrorLen) + "\x00the end"
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: &long,
			Attempt: &sluicetype.Attempt{Number: 1, Start: claimed.UpdatedAt, Outcome: sluicetype.OutcomeFailed, Error: long}}))
		h := b.get(id).History
		require.Len(t, h, 1)
		require.LessOrEqual(t, len(h[0].Error), driver.MaxAttemptErrorLen)
		require.True(t, strings.HasSuffix(h[0].Error, "\uFFFDthe end"), "the sanitised tail is kept: %q", h[0].Error[len(h[0].Error)-20:])
	})

	t.Run("InCallersTransaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("tx")
		id := b.insertOne(p)
		claimed, tok := b.claimOne(p, id, time.Minute)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		ok, err := b.d.CompleteTx(b.ctx, driver.CompleteTxParams{Tx: tx, Completion: driver.Completion{ID: id, Token: tok,
			Status: sluicetype.StatusSuccess, Attempt: &sluicetype.Attempt{Number: 1, Start: claimed.UpdatedAt, Outcome: sluicetype.OutcomeSuccess}}})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, tx.Commit())
		h := b.get(id).History
		require.Len(t, h, 1)
		require.Equal(t, sluicetype.OutcomeSuccess, h[0].Outcome)
	})

	t.Run("RescueRecordsLostAttemptAndStaleHolderAddsNone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("fenced-history"))
		require.Len(t, held.History, 1, "the rescue records the lost attempt")
		lostAttempt := held.History[0]
		require.Equal(t, 1, lostAttempt.Number)
		require.Equal(t, sluicetype.AttemptLeaseExpired, lostAttempt.Outcome)
		require.Contains(t, lostAttempt.Error, "lease expired")
		require.True(t, lostAttempt.Start.IsZero())
		require.False(t, lostAttempt.End.IsZero())

		stale := driver.Completion{ID: held.ID, Token: oldTok, Status: sluicetype.StatusFailed, Error: strPtr("late"),
			Attempt: &sluicetype.Attempt{Number: 1, Outcome: sluicetype.OutcomeFailed, Error: "late"}}
		require.Equal(t, []int64{held.ID}, b.complete(stale))
		require.Equal(t, held.History, b.get(held.ID).History, "a stale holder added an attempt")

		require.Empty(t, b.complete(driver.Completion{ID: held.ID, Token: newTok, Status: sluicetype.StatusSuccess,
			Attempt: &sluicetype.Attempt{Number: 2, Outcome: sluicetype.OutcomeSuccess}}))
		h := b.get(held.ID).History
		require.Len(t, h, 2)
		require.Equal(t, 2, h[1].Number)
	})

	t.Run("PurgeRemovesHistory", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("purged")
		id := b.insertOne(p)
		claimed, tok := b.claimOne(p, id, time.Minute)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("no"),
			Attempt: &sluicetype.Attempt{Number: 1, Start: claimed.UpdatedAt, Outcome: sluicetype.OutcomeFailed, Error: "no"}}))
		require.Len(t, b.get(id).History, 1)
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusFailed, OlderThan: -time.Hour, Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = b.d.GetJob(b.ctx, id)
		requireNotFound(t, err)
		// Nothing of the job is left anywhere: its history was a column of its row.
		var left int
		require.NoError(t, b.d.DB().QueryRowContext(b.ctx, "SELECT COUNT(*) FROM "+b.jobsTable()+" WHERE id = "+
			b.d.Dialect().Placeholder(1), id).Scan(&left))
		require.Zero(t, left)
	})

	t.Run("TraceParentKept", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		p := newJob("traced")
		p.TraceParent = tp
		id := b.insertOne(p)
		plain := b.insertOne(newJob("untraced"))
		claimed, _ := b.claimOne(p, id, time.Minute)
		require.Equal(t, tp, claimed.TraceParent, "claim returns the trace context")
		require.Equal(t, tp, b.get(id).TraceParent)
		require.Empty(t, b.get(plain).TraceParent)
		listed := b.listAll(sluicetype.ListParams{Type: "traced"})
		require.Len(t, listed, 1)
		require.Equal(t, tp, listed[0].TraceParent)
	})
}
