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

// sqlInsert runs an application's plain INSERT into the jobs table, with
// the columns and SQL literals given, on q (the pool or the app's
// transaction), and returns the new job's id.
func (b *bundle) sqlInsert(q driver.Querier, table, cols, values string) (int64, error) {
	stmt := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, cols, values)
	if b.d.Name() == "mysql" {
		res, err := q.ExecContext(b.ctx, stmt)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var id int64
	err := q.QueryRowContext(b.ctx, stmt+" RETURNING id").Scan(&id)
	return id, err
}

// syncTypes records settings, failing the case on an error, and returns
// how many rows SyncTypes wrote.
func (b *bundle) syncTypes(settings ...driver.TypeSettings) int {
	b.t.Helper()
	n, err := b.d.SyncTypes(b.ctx, driver.SyncTypesParams{Types: settings})
	require.NoError(b.t, err)
	return n
}

// exerciseTypes: an INSERT of plain SQL that leaves queue, max_attempts or
// dedupe out takes them from the type's settings (SyncTypes), as sluice's
// own enqueue does; values it gives win; and a row the table refuses is
// refused with the column's name.
func exerciseTypes(t *testing.T, open Opener) {
	mail := driver.TypeSettings{Type: "send_mail", Queue: "mail", MaxAttempts: 2, Dedupe: sluicetype.DedupeActive}

	t.Run("PlainInsertTakesTheTypeSettings", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		table := b.jobsTable()
		require.Equal(t, 1, b.syncTypes(mail))
		settings := func(id int64) driver.TypeSettings {
			j := b.get(id)
			return driver.TypeSettings{Type: j.Type, Queue: j.Queue, MaxAttempts: j.MaxAttempts, Dedupe: j.Dedupe}
		}

		id, err := b.sqlInsert(b.d.DB(), table, "type, payload", `'send_mail', '{"to":"a@example.com"}'`)
		require.NoError(t, err)
		require.Equal(t, mail, settings(id), "a job of the type takes its settings")

		id, err = b.sqlInsert(b.d.DB(), table, "type, queue, max_attempts, dedupe", "'send_mail', 'default', 5, 'permanent'")
		require.NoError(t, err)
		require.Equal(t, driver.TypeSettings{Type: "send_mail", Queue: "default", MaxAttempts: 5, Dedupe: sluicetype.DedupePermanent},
			settings(id), "values the INSERT gives win, the old defaults included")

		id, err = b.sqlInsert(b.d.DB(), table, "type, max_attempts", "'send_mail', 9")
		require.NoError(t, err)
		require.Equal(t, driver.TypeSettings{Type: "send_mail", Queue: "mail", MaxAttempts: 9, Dedupe: sluicetype.DedupeActive},
			settings(id), "each column left out is filled on its own")

		id, err = b.sqlInsert(b.d.DB(), table, "type", "'no_settings'")
		require.NoError(t, err)
		require.Equal(t, driver.TypeSettings{Type: "no_settings", Queue: "default", MaxAttempts: 5, Dedupe: sluicetype.DedupePermanent},
			settings(id), "a type without settings keeps the defaults")

		// A second sync of the same settings writes nothing; a change is
		// written, and later inserts take it.
		require.Zero(t, b.syncTypes(mail))
		changed := mail
		changed.MaxAttempts = 3
		require.Equal(t, 1, b.syncTypes(changed))
		id, err = b.sqlInsert(b.d.DB(), table, "type", "'send_mail'")
		require.NoError(t, err)
		require.Equal(t, changed, settings(id))
	})

	t.Run("InsideTheAppsTransaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		table := b.jobsTable()
		b.syncTypes(mail)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		id, err := b.sqlInsert(tx, table, "type", "'send_mail'")
		require.NoError(t, err)
		var queue string
		var attempts int
		require.NoError(t, tx.QueryRowContext(b.ctx, fmt.Sprintf("SELECT queue, max_attempts FROM %s WHERE id = %d", table, id)).Scan(&queue, &attempts))
		require.Equal(t, "mail", queue)
		require.Equal(t, 2, attempts)
		require.NoError(t, tx.Rollback())
		_, err = b.d.GetJob(b.ctx, id)
		require.ErrorIs(t, err, sluicetype.ErrNotFound, "the rolled-back job is gone")
	})

	t.Run("DedupeAppliesAtTheInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		table := b.jobsTable()
		b.syncTypes(mail)
		finish := func(queue string, id int64) {
			t.Helper()
			jobs := b.claim(driver.ClaimParams{Queue: queue, Limit: 1, Lease: time.Minute})
			require.Len(t, jobs, 1)
			require.Equal(t, id, jobs[0].ID)
			b.complete(driver.Completion{ID: id, Token: jobs[0].LockedBy, Status: sluicetype.StatusSuccess})
		}
		// The type's active dedupe frees the key once its job finished.
		first, err := b.sqlInsert(b.d.DB(), table, "type, business_key", "'send_mail', 'mail:1'")
		require.NoError(t, err)
		finish("mail", first)
		again, err := b.sqlInsert(b.d.DB(), table, "type, business_key", "'send_mail', 'mail:1'")
		require.NoError(t, err, "an active-mode key is free after its job finished")
		require.NotEqual(t, first, again)
		// The default, permanent, keeps it.
		kept, err := b.sqlInsert(b.d.DB(), table, "type, business_key", "'no_settings', 'other:1'")
		require.NoError(t, err)
		finish("default", kept)
		_, err = b.sqlInsert(b.d.DB(), table, "type, business_key", "'no_settings', 'other:1'")
		require.Error(t, err, "a permanent key stays taken")
		require.Contains(t, err.Error(), "business_key")
	})

	t.Run("RefusedRowsNameTheColumn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		table := b.jobsTable()
		for _, c := range []struct{ cols, values, column string }{
			{"type, business_key", "'t', ''", "business_key"},
			{"type, status", "'t', 'bogus'", "status"},
			{"type, dedupe", "'t', 'sometimes'", "dedupe"},
			{"type, queue", "'t', '" + strings.Repeat("q", sluicetype.MaxQueueLen+1) + "'", "queue"},
			{"type", "''", "type"},
			{"type, payload", "'t', '[1,2]'", "payload"},
			{"type, payload", `'t', '"{}"'`, "payload"},
			{"type, payload", "'t', 'null'", "payload"},
			{"type, max_attempts", "'t', -1", "max_attempts"},
		} {
			_, err := b.sqlInsert(b.d.DB(), table, c.cols, c.values)
			require.Error(t, err, "(%s) VALUES (%s)", c.cols, c.values)
			require.Contains(t, err.Error(), c.column, "(%s) VALUES (%s): the error names the column", c.cols, c.values)
		}
		// Text that is not JSON is refused too, but PostgreSQL parses the
		// literal before there is a row, so it names the type (json), not
		// the column.
		_, err := b.sqlInsert(b.d.DB(), table, "type, payload", "'t', '{'")
		require.Error(t, err)
		if b.d.Name() != "postgres" {
			require.Contains(t, err.Error(), "payload")
		}
		var n int
		require.NoError(t, b.d.DB().QueryRowContext(b.ctx, "SELECT COUNT(*) FROM "+table).Scan(&n))
		require.Zero(t, n, "nothing was written")
	})

	t.Run("SyncTypesRefusesBadSettings", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for field, s := range map[string]driver.TypeSettings{
			"max_attempts": {Type: "t", Queue: "q", MaxAttempts: 0, Dedupe: sluicetype.DedupeActive},
			"queue":        {Type: "t", Queue: "", MaxAttempts: 1, Dedupe: sluicetype.DedupeActive},
			"dedupe":       {Type: "t", Queue: "q", MaxAttempts: 1, Dedupe: "x"},
		} {
			_, err := b.d.SyncTypes(b.ctx, driver.SyncTypesParams{Types: []driver.TypeSettings{s}})
			require.Error(t, err)
			require.Contains(t, err.Error(), field)
		}
		id, err := b.sqlInsert(b.d.DB(), b.jobsTable(), "type", "'t'")
		require.NoError(t, err)
		require.Equal(t, 5, b.get(id).MaxAttempts, "no bad settings were written")
	})

	t.Run("UnservedTypesCountJobsWaitingForAHandler", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		settings := func(typ string) driver.TypeSettings {
			return driver.TypeSettings{Type: typ, Queue: "default", MaxAttempts: 5, Dedupe: sluicetype.DedupePermanent}
		}
		b.syncTypes(settings("a"), settings("b"))
		b.insert(newJob("a"), newJob("a"), newJob("b"), newJob("c"))
		finished := b.insertOne(newJob("b"))
		_, err := b.d.DB().ExecContext(b.ctx, "UPDATE "+b.jobsTable()+" SET status = 'success' WHERE id = "+fmt.Sprint(finished))
		require.NoError(t, err)
		unserved := func(within time.Duration) []sluicetype.TypeCount {
			t.Helper()
			got, err := b.d.UnservedTypes(b.ctx, driver.UnservedTypesParams{Within: within})
			require.NoError(t, err)
			return got
		}
		require.Equal(t, []sluicetype.TypeCount{{Type: "a", Pending: 2}, {Type: "b", Pending: 1}, {Type: "c", Pending: 1}},
			unserved(time.Hour), "no type was served yet: every pending job waits, finished ones do not count")

		// c has no settings row: ServeTypes leaves it alone, and its jobs
		// still wait (no process that synced its types serves it).
		require.NoError(t, b.d.ServeTypes(b.ctx, driver.ServeTypesParams{Types: []string{"a", "c"}}))
		require.Equal(t, []sluicetype.TypeCount{{Type: "b", Pending: 1}, {Type: "c", Pending: 1}}, unserved(time.Hour))

		time.Sleep(50 * time.Millisecond)
		require.Equal(t, []sluicetype.TypeCount{{Type: "a", Pending: 2}, {Type: "b", Pending: 1}, {Type: "c", Pending: 1}},
			unserved(time.Millisecond), "a served 50 ms ago is not served within the last 1 ms")
	})

	t.Run("UnservedQueuesCountJobsInQueuesNothingRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		job := func(queue string) driver.InsertJob {
			j := newJob("a")
			j.Queue = queue
			return j
		}
		b.insert(job("default"), job("emails"), job("emails"), job("paused"))
		finished := b.insertOne(job("done"))
		_, err := b.d.DB().ExecContext(b.ctx, "UPDATE "+b.jobsTable()+" SET status = 'success' WHERE id = "+fmt.Sprint(finished))
		require.NoError(t, err)
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "paused", Paused: true}))
		unserved := func(within time.Duration) []sluicetype.QueueCount {
			t.Helper()
			got, err := b.d.UnservedQueues(b.ctx, driver.UnservedQueuesParams{Within: within})
			require.NoError(t, err)
			return got
		}
		served := func(within time.Duration) []string {
			t.Helper()
			got, err := b.d.ServedQueues(b.ctx, driver.UnservedQueuesParams{Within: within})
			require.NoError(t, err)
			return got
		}
		require.Equal(t, []sluicetype.QueueCount{{Queue: "default", Pending: 1}, {Queue: "emails", Pending: 2}, {Queue: "paused", Pending: 1}},
			unserved(time.Hour), "no queue was served yet: every pending job waits, finished ones do not count")
		require.Empty(t, served(time.Hour))

		// A queue with a pause flag keeps it; one without a row gets one.
		require.NoError(t, b.d.ServeQueues(b.ctx, driver.ServeQueuesParams{Queues: []string{"default", "paused"}}))
		require.Equal(t, []sluicetype.QueueCount{{Queue: "emails", Pending: 2}}, unserved(time.Hour))
		require.Equal(t, []string{"default", "paused"}, served(time.Hour))
		paused, err := b.d.PausedQueues(b.ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"paused": true}, paused, "stamping a queue served neither pauses nor resumes it")

		time.Sleep(50 * time.Millisecond)
		require.Len(t, unserved(time.Millisecond), 3, "a queue served 50 ms ago is not served within the last 1 ms")
		require.Empty(t, served(time.Millisecond))
	})
}
