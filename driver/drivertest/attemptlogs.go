package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseAttemptLogs(t *testing.T, open Opener) {
	t.Run("WrittenWithTheOutcome", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("logged")
		id, tok := b.claimNew(p)
		before := b.now()
		first := &sluicetype.AttemptLog{Text: "out 1\nerr 1\n", Bytes: 12}
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending,
			Error: strPtr("err 1"), Log: logFor(id, 1, first)}))
		_, tok = b.claimOne(p, id, time.Minute)
		// Text a database might mangle: NUL and invalid UTF-8 are
		// replaced, the rest comes back as written; a head and tail cut
		// keeps its marker and counts.
		second := &sluicetype.AttemptLog{Text: "ünï\x00\xff\n[sluice: 100 bytes left out]\n'quoted' \\ end", Bytes: 140, Omitted: 100}
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess, Log: logFor(id, 2, second)}))
		after := b.now()

		logs := b.logs(id, 0)
		require.Len(t, logs, 2)
		require.Equal(t, []int{1, 2}, []int{logs[0].Attempt, logs[1].Attempt})
		require.Equal(t, "out 1\nerr 1\n", logs[0].Text)
		require.Equal(t, "ünï\uFFFD\uFFFD\n[sluice: 100 bytes left out]\n'quoted' \\ end", logs[1].Text)
		require.Equal(t, int64(140), logs[1].Bytes)
		require.Equal(t, int64(100), logs[1].Omitted)
		for _, l := range logs {
			require.Equal(t, id, l.JobID)
			requireBetween(t, l.CreatedAt, before, after, "attempt log's created_at")
		}
		require.Equal(t, logs[1:], b.logs(id, 2), "one attempt's log")
		require.Empty(t, b.logs(id, 3))
		require.Empty(t, b.logs(id+1000, 0), "no logs is no error")
	})

	t.Run("BoundedAtMaxLogLen", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		id, tok := b.claimNew(newJob("long"))
		long := strings.Repeat("x", sluicetype.MaxLogLen+10)
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess,
			Log: logFor(id, 1, &sluicetype.AttemptLog{Text: long, Bytes: int64(len(long))})}))
		require.Len(t, b.logs(id, 1)[0].Text, sluicetype.MaxLogLen)
	})

	// An attempt that lost its lease writes no log, so it can never
	// replace the live attempt's: neither through Complete nor through
	// CompleteTx.
	t.Run("StaleAttemptWritesNone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("fenced"))
		id := held.ID
		stale := driver.Completion{ID: id, Token: oldTok, Status: sluicetype.StatusSuccess,
			Log: logFor(id, 2, &sluicetype.AttemptLog{Text: "stale", Bytes: 5})}
		require.Equal(t, []int64{id}, b.complete(stale))
		tx, ok := b.completeTx(b.notesTable(), "stale", stale)
		require.False(t, ok)
		require.NoError(t, tx.Rollback())
		require.Empty(t, b.logs(id, 0))

		live := driver.Completion{ID: id, Token: newTok, Status: sluicetype.StatusSuccess,
			Log: logFor(id, 2, &sluicetype.AttemptLog{Text: "live", Bytes: 4})}
		tx, ok = b.completeTx(b.notesTable(), "live", live)
		require.True(t, ok)
		require.NoError(t, tx.Commit())
		require.Equal(t, []int64{id}, b.complete(driver.Completion{ID: id, Token: oldTok, Status: sluicetype.StatusFailed,
			Log: logFor(id, 2, &sluicetype.AttemptLog{Text: "stale", Bytes: 5})}), "a stale outcome after the live one")
		logs := b.logs(id, 0)
		require.Len(t, logs, 1)
		require.Equal(t, "live", logs[0].Text)
	})

	// A batch of outcomes writes the logs of the applied ones only, and a
	// batch without logs still completes.
	t.Run("BatchWritesAppliedOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, _ := b.reclaimed(newJob("fenced"))
		a, tokA := b.claimNew(newJob("a"))
		c, tokC := b.claimNew(newJob("c"))
		lost := b.complete(
			driver.Completion{ID: a, Token: tokA, Status: sluicetype.StatusSuccess, Log: logFor(a, 1, &sluicetype.AttemptLog{Text: "a", Bytes: 1})},
			driver.Completion{ID: held.ID, Token: oldTok, Status: sluicetype.StatusSuccess,
				Log: logFor(held.ID, 1, &sluicetype.AttemptLog{Text: "stale", Bytes: 5})},
			driver.Completion{ID: c, Token: tokC, Status: sluicetype.StatusSuccess})
		require.Equal(t, []int64{held.ID}, lost)
		require.Len(t, b.logs(a, 0), 1)
		require.Empty(t, b.logs(held.ID, 0))
		require.Empty(t, b.logs(c, 0))
		require.Equal(t, sluicetype.StatusSuccess, b.get(c).Status)
	})

	// Logs go with their job, whatever deletes it: a purge or a delete.
	t.Run("PurgedWithTheJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		logged := func(typ string, status sluicetype.Status) int64 {
			id, tok := b.claimNew(newJob(typ))
			require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: status,
				Log: logFor(id, 1, &sluicetype.AttemptLog{Text: typ, Bytes: int64(len(typ))})}))
			require.Len(t, b.logs(id, 0), 1)
			return id
		}
		purged, deleted := logged("purged", sluicetype.StatusSuccess), logged("deleted", sluicetype.StatusSuccess)
		kept := logged("kept", sluicetype.StatusPending)

		_, err := b.d.Bulk(b.ctx, driver.BulkParams{Action: sluicetype.BulkDelete, Filter: sluicetype.ListParams{Type: "deleted"}})
		require.NoError(t, err)
		require.Empty(t, b.logs(deleted, 0))

		// finished_at < now is strict; let the clock move past the finish.
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Empty(t, b.logs(purged, 0))
		require.Len(t, b.logs(kept, 0), 1)
	})
}

// logFor is l as the worker fills it in for job id's attempt.
func logFor(id int64, attempt int, l *sluicetype.AttemptLog) *sluicetype.AttemptLog {
	l.JobID, l.Attempt = id, attempt
	return l
}

func (b *bundle) logs(id int64, attempt int) []sluicetype.AttemptLog {
	b.t.Helper()
	logs, err := b.d.ReadAttemptLogs(b.ctx, driver.ReadAttemptLogsParams{JobID: id, Attempt: attempt})
	require.NoError(b.t, err)
	return logs
}
