package drivertest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// reclaimed sets up the race that fencing exists for: a worker claims a
// job, its lease expires, the job is rescued and claimed by a second
// worker. It returns the job as the second worker holds it and both tokens.
func (b *bundle) reclaimed(p driver.InsertJob) (row *sluicetype.JobRow, oldTok, newTok string) {
	b.t.Helper()
	id := b.insertOne(p)
	// A negative lease is already expired: no sleeping for a lease to run out.
	_, oldTok = b.claimOne(p, id, -time.Second)
	require.Equal(b.t, sluicetype.RescueResult{Pending: 1}, b.rescue(100))
	_, newTok = b.claimOne(p, id, time.Minute)
	row = b.get(id)
	require.Equal(b.t, 2, row.Attempts)
	require.Equal(b.t, newTok, row.LockedBy)
	return row, oldTok, newTok
}

func exerciseFencing(t *testing.T, open Opener) {
	t.Run("StaleTokenCannotComplete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("fenced"))
		id := held.ID

		// Every outcome the old worker might report is dropped.
		for _, c := range []driver.Completion{
			{Status: sluicetype.StatusSuccess, Result: strPtr("old result")},
			{Status: sluicetype.StatusFailed, Error: strPtr("old failure")},
			{Status: sluicetype.StatusPending, Delay: time.Hour, Error: strPtr("old retry")},
			{Status: sluicetype.StatusPending, Delay: time.Hour, Refund: true},
		} {
			c.ID, c.Token = id, oldTok
			require.Equal(t, []int64{id}, b.complete(c), "stale %s completion was applied", c.Status)
			require.Equal(t, held, b.get(id), "stale %s completion changed the row", c.Status)
		}

		require.Empty(t, b.complete(driver.Completion{ID: id, Token: newTok, Status: sluicetype.StatusSuccess, Result: strPtr("new result")}))
		j := b.get(id)
		require.Equal(t, sluicetype.StatusSuccess, j.Status)
		require.Equal(t, "new result", j.Result)
		require.Equal(t, 2, j.Attempts)
	})

	t.Run("HeartbeatExtendsOnlyHeldLeases", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 3 {
			b.insertOne(newJob("hb"))
		}
		tokA, tokB := newToken(), newToken()
		mine := b.claim(driver.ClaimParams{Queue: "default", Limit: 2, Lease: 30 * time.Second, Token: tokA})
		require.Len(t, mine, 2)
		theirs := b.claim(driver.ClaimParams{Queue: "default", Limit: 1, Lease: 30 * time.Second, Token: tokB})
		require.Len(t, theirs, 1)

		before := b.now()
		lost, err := b.d.Heartbeat(b.ctx, driver.HeartbeatParams{Token: tokA, IDs: []int64{mine[0].ID, theirs[0].ID, mine[1].ID}, Lease: time.Hour})
		after := b.now()
		require.NoError(t, err)
		require.Equal(t, []int64{theirs[0].ID}, lost)
		for _, j := range mine {
			got := b.get(j.ID)
			require.Equal(t, tokA, got.LockedBy)
			require.Equal(t, sluicetype.StatusProcessing, got.Status)
			requireBetween(t, *got.LockedUntil, before.Add(time.Hour), after.Add(time.Hour), "extended locked_until")
		}
		other := b.get(theirs[0].ID)
		require.Equal(t, theirs[0].LockedUntil, other.LockedUntil, "a heartbeat with the wrong token moved the lease")
		require.Equal(t, tokB, other.LockedBy)

		// All held: nothing lost.
		lost, err = b.d.Heartbeat(b.ctx, driver.HeartbeatParams{Token: tokB, IDs: []int64{theirs[0].ID}, Lease: time.Minute})
		require.NoError(t, err)
		require.Empty(t, lost)
	})

	t.Run("HeartbeatAfterRescueIsLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		held, oldTok, newTok := b.reclaimed(newJob("hb"))
		lost, err := b.d.Heartbeat(b.ctx, driver.HeartbeatParams{Token: oldTok, IDs: []int64{held.ID}, Lease: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []int64{held.ID}, lost)
		require.Equal(t, held, b.get(held.ID), "a stale heartbeat changed the row")

		// A finished job is lost to its own token as well.
		require.Empty(t, b.complete(driver.Completion{ID: held.ID, Token: newTok, Status: sluicetype.StatusSuccess}))
		lost, err = b.d.Heartbeat(b.ctx, driver.HeartbeatParams{Token: newTok, IDs: []int64{held.ID}, Lease: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []int64{held.ID}, lost)
		require.Nil(t, b.get(held.ID).LockedUntil)
	})

	t.Run("CompleteTxCommitsWithCallerWrites", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		notes := b.notesTable()
		p := newJob("tx")
		id, tok := b.claimNew(p)

		tx, held := b.completeTx(notes, "charged", driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr("tx result")})
		require.True(t, held)
		require.NoError(t, tx.Commit())

		j := b.get(id)
		require.Equal(t, sluicetype.StatusSuccess, j.Status)
		require.Equal(t, "tx result", j.Result)
		require.NotNil(t, j.FinishedAt)
		require.Equal(t, []string{"charged"}, b.notes(notes))
	})

	t.Run("CompleteTxRollsBackWithCallerWrites", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		notes := b.notesTable()
		p := newJob("tx")
		id, tok := b.claimNew(p)
		claimed := b.get(id)

		tx, held := b.completeTx(notes, "charged", driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess})
		require.True(t, held)
		require.NoError(t, tx.Rollback())

		require.Equal(t, claimed, b.get(id), "the outcome survived the rollback")
		require.Empty(t, b.notes(notes))
	})

	t.Run("CompleteTxWithStaleToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		notes := b.notesTable()
		held, oldTok, _ := b.reclaimed(newJob("tx"))

		tx, ok := b.completeTx(notes, "charged twice", driver.Completion{ID: held.ID, Token: oldTok, Status: sluicetype.StatusSuccess})
		require.False(t, ok, "CompleteTx reported a lost lease as held")
		// The caller rolls back on false, as the library does.
		require.NoError(t, tx.Rollback())
		require.Equal(t, held, b.get(held.ID))
		require.Empty(t, b.notes(notes))
	})
}

// notesTable creates a table standing for the caller's own data, dropped
// when the case ends. Its SQL is portable across the three databases.
func (b *bundle) notesTable() string {
	b.t.Helper()
	name := randomName("drivertest_notes_")
	_, err := b.d.DB().ExecContext(b.ctx, "CREATE TABLE "+name+" (id INTEGER NOT NULL PRIMARY KEY, note VARCHAR(64) NOT NULL)")
	require.NoError(b.t, err)
	b.t.Cleanup(func() {
		// The case's context is gone by now; the driver is still open
		// because its cleanup was registered first and so runs last.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.d.DB().ExecContext(ctx, "DROP TABLE "+name)
	})
	return name
}

// completeTx does what a handler that writes its own data does: in one
// transaction it inserts note into the notes table and completes c. It
// returns the transaction, still open for the case to commit or roll
// back (it is rolled back when the case ends if neither happened), and
// whether the lease was held.
func (b *bundle) completeTx(notes, note string, c driver.Completion) (*sql.Tx, bool) {
	b.t.Helper()
	tx, err := b.d.DB().BeginTx(b.ctx, nil)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = tx.Rollback() })
	_, err = tx.ExecContext(b.ctx, "INSERT INTO "+notes+" (id, note) VALUES (1, '"+note+"')")
	require.NoError(b.t, err)
	held, err := b.d.CompleteTx(b.ctx, driver.CompleteTxParams{Tx: tx, Completion: c})
	require.NoError(b.t, err)
	return tx, held
}

func (b *bundle) notes(table string) []string {
	b.t.Helper()
	rows, err := b.d.DB().QueryContext(b.ctx, "SELECT note FROM "+table+" ORDER BY id")
	require.NoError(b.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(b.t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(b.t, rows.Err())
	return out
}
