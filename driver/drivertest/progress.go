package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseProgress(t *testing.T, open Opener) {
	t.Run("WrittenAndRead", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		id, tok := b.claimNew(newJob("progress"))
		require.Nil(t, b.get(id).Progress, "a job that reported nothing has no progress")

		before := b.now()
		require.True(t, b.progress(id, tok, 5, 10, "half way"))
		p := b.get(id).Progress
		require.NotNil(t, p)
		require.Equal(t, [2]int64{5, 10}, [2]int64{p.Done, p.Total})
		require.Equal(t, "half way", p.Message)
		require.False(t, p.At.Before(before.Add(-time.Second)), "progress_at %v is the database clock, not before %v", p.At, before)

		// The latest report wins; a message is cleaned like an error
		// and cut to its bound.
		long := "a\x00b" + strings.Repeat("é", sluicetype.MaxProgressMessageLen)
		require.True(t, b.progress(id, tok, 7, 0, long))
		p = b.get(id).Progress
		require.Equal(t, [2]int64{7, 0}, [2]int64{p.Done, p.Total})
		require.Equal(t, driver.StorableText(long, sluicetype.MaxProgressMessageLen, false), p.Message)
		require.LessOrEqual(t, len(p.Message), sluicetype.MaxProgressMessageLen)
		require.True(t, strings.HasPrefix(p.Message, "a\uFFFDb"))
	})

	t.Run("StaleAttemptRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("progress-stale"))
		require.False(t, b.progress(held.ID, oldTok, 1, 2, "old"), "a stale attempt's progress was written")
		require.Equal(t, held, b.get(held.ID), "a stale attempt's progress changed the row")
		require.True(t, b.progress(held.ID, newTok, 2, 2, "new"))
		require.Equal(t, "new", b.get(held.ID).Progress.Message)
	})

	t.Run("FinishedJobRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		id, tok := b.claimNew(newJob("progress-done"))
		require.True(t, b.progress(id, tok, 9, 10, "almost"))
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
		done := b.get(id)
		require.Equal(t, "almost", done.Progress.Message, "a finished job keeps its last attempt's progress")
		require.False(t, b.progress(id, tok, 10, 10, "late"))
		require.Equal(t, done, b.get(id))
	})

	t.Run("NewAttemptClears", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("progress-retry")
		id, tok := b.claimNew(p)
		require.True(t, b.progress(id, tok, 3, 10, "first try"))
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending,
			Error: strPtr("retry"), Attempt: &sluicetype.Attempt{Number: 1, Outcome: sluicetype.OutcomeRetry,
				Progress: &sluicetype.Progress{Done: 3, Total: 10, Message: "first try"}}}))
		j := b.get(id)
		require.Equal(t, "first try", j.Progress.Message, "a job waiting for its retry shows its last attempt's progress")
		require.Len(t, j.History, 1)
		require.Equal(t, &sluicetype.Progress{Done: 3, Total: 10, Message: "first try"}, j.History[0].Progress,
			"the attempt's history entry keeps its progress")

		claimed, _ := b.claimOne(p, id, time.Minute)
		require.Nil(t, claimed.Progress, "the claim returned the last attempt's progress")
		require.Nil(t, b.get(id).Progress, "a new attempt starts without progress")
	})
}

// progress writes one report and returns whether tok still held job id.
func (b *bundle) progress(id int64, tok string, done, total int64, msg string) bool {
	b.t.Helper()
	held, err := b.d.Progress(b.ctx, driver.ProgressParams{ID: id, Token: tok, Done: done, Total: total, Message: msg})
	require.NoError(b.t, err)
	return held
}
