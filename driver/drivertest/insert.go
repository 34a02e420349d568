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

func exerciseInsert(t *testing.T, open Opener) {
	t.Run("EnqueueCreatesPending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("email", "order-17", sluicetype.DedupeActive)
		p.Queue, p.Payload, p.Priority, p.MaxAttempts = "mail", []byte(`{"to": "ana@example.com", "n": [1, 2]}`), 3, 7
		before := b.now()
		id := b.insertOne(p)
		after := b.now()

		j := b.get(id)
		require.Equal(t, "mail", j.Queue)
		require.Equal(t, "email", j.Type)
		require.Equal(t, "order-17", j.Key)
		require.Equal(t, sluicetype.DedupeActive, j.Dedupe)
		require.JSONEq(t, string(p.Payload), string(j.Payload))
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 3, j.Priority)
		require.Equal(t, 0, j.Attempts)
		require.Equal(t, 7, j.MaxAttempts)
		requireBetween(t, j.NextRunAt, before, after, "next_run_at")
		requireBetween(t, j.CreatedAt, before, after, "created_at")
		requireBetween(t, j.UpdatedAt, before, after, "updated_at")
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
		require.Nil(t, j.FinishedAt)
		require.Empty(t, j.LastError)
		require.Empty(t, j.Result)
	})

	t.Run("DelayCountsFromDatabaseClock", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("later")
		p.Delay = time.Hour
		before := b.now()
		id := b.insertOne(p)
		after := b.now()
		requireBetween(t, b.get(id).NextRunAt, before.Add(time.Hour), after.Add(time.Hour), "next_run_at")
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()}),
			"a delayed job was claimable before its time")
	})

	t.Run("RunAtIsAnInstantInAnyZone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A caller's time in another zone names the same instant; a driver
		// that formats it without converting to UTC shifts it by hours.
		zone := time.FixedZone("UTC+5:30", 5*3600+1800)
		runAt := b.now().Add(90 * time.Minute).Truncate(time.Millisecond).In(zone)
		p := newJob("zoned")
		p.RunAt = runAt
		id := b.insertOne(p)
		got := b.get(id).NextRunAt
		require.True(t, got.Equal(runAt), "next_run_at = %s, want %s", got, runAt.UTC())

		// Sub-millisecond parts survive to at least the millisecond.
		precise := b.now().Add(time.Hour + 123*time.Millisecond + 456*time.Microsecond + 789*time.Nanosecond)
		p.RunAt = precise
		id = b.insertOne(p)
		require.WithinDuration(t, precise, b.get(id).NextRunAt, time.Millisecond)

		// RunAt wins over Delay when both are set.
		p.RunAt, p.Delay = runAt, 10*time.Hour
		id = b.insertOne(p)
		require.True(t, b.get(id).NextRunAt.Equal(runAt))
	})

	t.Run("BulkKeepsInputOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Two keys exist before the batch, so some rows in it are duplicates
		// of stored jobs and some of earlier rows in the same batch.
		pre := b.insert(keyed("bulk", "dup-0", sluicetype.DedupePermanent), keyed("bulk", "uniq-6", sluicetype.DedupePermanent))
		const n = 2500
		ps := make([]driver.InsertJob, n)
		for i := range ps {
			p := newJob(fmt.Sprintf("bulk-%d", i%3))
			p.Payload, p.Priority = jsonPayload(i), i%4
			switch {
			case i%5 == 0:
				p.Key = fmt.Sprintf("dup-%d", i/5%40)
			case i%5 == 1:
				p.Key = fmt.Sprintf("uniq-%d", i)
			case i%5 == 2:
				p.Key, p.Dedupe = fmt.Sprintf("active-%d", i), sluicetype.DedupeActive
			}
			ps[i] = p
		}
		res := b.insert(ps...)

		firstOf := map[string]int64{"dup-0": pre[0].ID, "uniq-6": pre[1].ID}
		seen := map[int64]bool{}
		// The stored rows, read in pages rather than one GetJob each: 2,000
		// round trips took over the bundle's 3 minutes under -race on a
		// loaded machine.
		stored := map[int64]sluicetype.JobRow{}
		for _, j := range b.listAll(sluicetype.ListParams{}) {
			stored[j.ID] = j
		}
		for i, r := range res {
			p := ps[i]
			if p.Key != "" {
				if want, ok := firstOf[p.Key]; ok {
					require.True(t, r.Duplicate, "row %d (key %s) should be a duplicate", i, p.Key)
					require.Equal(t, want, r.ID, "row %d (key %s) returned another id than the key's holder", i, p.Key)
					continue
				}
				firstOf[p.Key] = r.ID
			}
			require.False(t, r.Duplicate, "row %d (key %q) is new", i, p.Key)
			require.False(t, seen[r.ID], "row %d got id %d twice", i, r.ID)
			seen[r.ID] = true

			// Each returned id is the row built from input i.
			j, ok := stored[r.ID]
			require.True(t, ok, "row %d: id %d is not stored", i, r.ID)
			require.Equal(t, p.Type, j.Type, "row %d", i)
			require.Equal(t, p.Key, j.Key, "row %d", i)
			require.Equal(t, p.Dedupe, j.Dedupe, "row %d", i)
			require.Equal(t, p.Priority, j.Priority, "row %d", i)
			require.JSONEq(t, string(p.Payload), string(j.Payload), "row %d", i)
		}
		// The 500 dup-* rows share 40 keys, of which dup-0 was stored
		// already; uniq-6 (row 6) was stored already too.
		const want = n - 500 + 39 - 1
		require.Len(t, seen, want)
		require.Len(t, stored, want+2)
	})

	t.Run("BulkAcrossChunks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Drivers cut big batches into statements by rows and by bytes; ids
		// must still line up with the input across the cuts. 5,100 rows pass
		// every driver's row limit, and 100 KiB payloads the byte limits.
		const n = 5100
		big := `{"blob": "` + strings.Repeat("z", 100<<10) + `"}`
		ps := make([]driver.InsertJob, n)
		for i := range ps {
			ps[i] = newJob("chunk")
			ps[i].Payload = jsonPayload(i)
			if i%7 == 3 {
				ps[i].Key = fmt.Sprintf("chunk-%d", i)
			}
			if i >= n-30 {
				ps[i].Payload = []byte(big)
				ps[i].Priority = i
			}
		}
		res := b.insert(ps...)
		rows := map[int64]sluicetype.JobRow{}
		for _, j := range b.listAll(sluicetype.ListParams{}) {
			rows[j.ID] = j
		}
		require.Len(t, rows, n)
		for i, r := range res {
			require.False(t, r.Duplicate, "row %d", i)
			j, ok := rows[r.ID]
			require.True(t, ok, "row %d: id %d is no job", i, r.ID)
			require.Equal(t, ps[i].Key, j.Key, "row %d", i)
			require.Equal(t, ps[i].Priority, j.Priority, "row %d", i)
			require.JSONEq(t, string(ps[i].Payload), string(j.Payload), "row %d", i)
			delete(rows, r.ID)
		}
	})

	t.Run("TxRollbackLeavesNoRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		res, err := b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{keyed("tx", "tx-key", sluicetype.DedupePermanent), newJob("tx")}})
		require.NoError(t, err)
		require.Len(t, res, 2)
		require.NoError(t, tx.Rollback())

		for _, r := range res {
			_, err := b.d.GetJob(b.ctx, r.ID)
			requireNotFound(t, err)
		}
		require.Empty(t, b.listAll(sluicetype.ListParams{}))
		// The key went with the rollback.
		b.insertOne(keyed("tx", "tx-key", sluicetype.DedupePermanent))
	})

	t.Run("TxCommitKeepsRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		res, err := b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{keyed("tx", "tx-key", sluicetype.DedupePermanent), keyed("tx", "tx-key", sluicetype.DedupePermanent)}})
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		require.Equal(t, driver.InsertResult{ID: res[0].ID, Duplicate: true}, res[1])
		require.NoError(t, tx.Commit())

		require.Equal(t, sluicetype.StatusPending, b.get(res[0].ID).Status)
		b.requireDuplicate(keyed("tx", "tx-key", sluicetype.DedupePermanent), res[0].ID)
	})

	t.Run("TxSeesKeysCommittedSinceItsSnapshot", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		if b.d.Name() == "sqlite" {
			// One writer connection: nothing can commit while the caller's
			// transaction is open, so there is no race to test.
			t.Skip("sqlite serialises writers")
		}
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		// The caller's transaction has read (and so, under REPEATABLE
		// READ, fixed its snapshot) before another session takes the key.
		_, err = b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{newJob("first")}})
		require.NoError(t, err)
		other := b.insertOne(keyed("t", "raced", sluicetype.DedupePermanent))

		res, err := b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{keyed("t", "raced", sluicetype.DedupePermanent), keyed("t", "fresh", sluicetype.DedupePermanent)}})
		require.NoError(t, err)
		require.Equal(t, driver.InsertResult{ID: other, Duplicate: true}, res[0])
		require.False(t, res[1].Duplicate)
		require.NoError(t, tx.Commit())
		require.Len(t, b.listAll(sluicetype.ListParams{}), 3)
	})

	t.Run("WaitsForUncommittedHolder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// An enqueue that races a caller's open transaction holding the same
		// key learns the outcome of that transaction: a duplicate if it
		// commits, a new job if it rolls back.
		for _, commit := range []bool{true, false} {
			key := fmt.Sprintf("pending-tx-%v", commit)
			tx, err := b.d.DB().BeginTx(b.ctx, nil)
			require.NoError(t, err)
			held, err := b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{keyed("t", key, sluicetype.DedupeActive)}})
			require.NoError(t, err)

			type result struct {
				res []driver.InsertResult
				err error
			}
			ch := make(chan result, 1)
			go func() {
				res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: []driver.InsertJob{keyed("t", key, sluicetype.DedupeActive)}})
				ch <- result{res, err}
			}()
			// Give the racing insert time to block on the key (or, on a
			// single-writer database, on the connection).
			time.Sleep(100 * time.Millisecond)
			if commit {
				require.NoError(t, tx.Commit())
			} else {
				require.NoError(t, tx.Rollback())
			}
			r := <-ch
			require.NoError(t, r.err)
			require.Len(t, r.res, 1)
			if commit {
				require.Equal(t, driver.InsertResult{ID: held[0].ID, Duplicate: true}, r.res[0])
			} else {
				require.False(t, r.res[0].Duplicate, "duplicate of a job that was rolled back")
				require.Equal(t, key, b.get(r.res[0].ID).Key)
			}
		}
		require.Len(t, b.listAll(sluicetype.ListParams{}), 2)
	})

	t.Run("UnicodeRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Limits count characters, and four-byte characters fit whole.
		p := keyed("отчёт", "заказ-😀-1", sluicetype.DedupePermanent)
		p.Queue, p.Payload = "очередь", []byte(`{"name": "Zoë 😀", "esc": "a\"b\u00e9"}`)
		j := b.get(b.insertOne(p))
		require.Equal(t, p.Queue, j.Queue)
		require.Equal(t, p.Type, j.Type)
		require.Equal(t, p.Key, j.Key)
		require.JSONEq(t, string(p.Payload), string(j.Payload))
		b.requireDuplicate(p, j.ID)

		long := keyed("t", strings.Repeat("😀", sluicetype.MaxKeyLen), sluicetype.DedupePermanent)
		id := b.insertOne(long)
		require.Equal(t, long.Key, b.get(id).Key)
		b.requireDuplicate(long, id)
		// Keys that differ in their last four-byte character are distinct.
		other := keyed("t", strings.Repeat("😀", sluicetype.MaxKeyLen-1)+"😁", sluicetype.DedupePermanent)
		require.NotEqual(t, id, b.insertOne(other))
	})

	t.Run("BatchIsAllOrNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		bad := newJob(strings.Repeat("t", sluicetype.MaxTypeLen+1))
		_, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: []driver.InsertJob{keyed("ok", "k1", sluicetype.DedupePermanent), newJob("ok"), bad}})
		require.Error(t, err, "a type longer than %d characters was accepted", sluicetype.MaxTypeLen)
		require.Empty(t, b.listAll(sluicetype.ListParams{}), "a failed batch left rows behind")
		// Nor did it leave k1 taken.
		b.insertOne(keyed("ok", "k1", sluicetype.DedupePermanent))
	})

	t.Run("ColumnLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// The longest allowed values fit exactly, unchanged.
		p := keyed(strings.Repeat("t", sluicetype.MaxTypeLen), strings.Repeat("k", sluicetype.MaxKeyLen), sluicetype.DedupePermanent)
		p.Queue = strings.Repeat("q", sluicetype.MaxQueueLen)
		j := b.get(b.insertOne(p))
		require.Equal(t, p.Queue, j.Queue)
		require.Equal(t, p.Type, j.Type)
		require.Equal(t, p.Key, j.Key)

		// One more character fails the same way everywhere, never silently
		// truncating (which would make two keys collide).
		for name, mod := range map[string]func(*driver.InsertJob){
			"queue": func(p *driver.InsertJob) { p.Queue = strings.Repeat("q", sluicetype.MaxQueueLen+1) },
			"type":  func(p *driver.InsertJob) { p.Type = strings.Repeat("t", sluicetype.MaxTypeLen+1) },
			"key":   func(p *driver.InsertJob) { p.Key = strings.Repeat("x", sluicetype.MaxKeyLen+1) },
		} {
			p := newJob("limits")
			mod(&p)
			_, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: []driver.InsertJob{p}})
			require.Error(t, err, "over-long %s was accepted", name)
		}
		require.Len(t, b.listAll(sluicetype.ListParams{}), 1)
	})

	t.Run("PlainSQLInsertUsesDefaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// docs/reference.md "Job table" makes the table a stable contract: an app may
		// enqueue with a plain INSERT naming only the type, and the column
		// defaults must make a runnable job of it.
		table := b.jobsTable()
		before := b.now()
		_, err := b.d.DB().ExecContext(b.ctx, "INSERT INTO "+table+" (type) VALUES ('plain-sql')")
		require.NoError(t, err)
		after := b.now()
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "plain-sql"})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		j := jobs[0]
		require.Equal(t, "default", j.Queue)
		require.Equal(t, sluicetype.DedupePermanent, j.Dedupe)
		require.JSONEq(t, `{}`, string(j.Payload))
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Priority)
		require.Equal(t, 0, j.Attempts)
		require.Equal(t, 5, j.MaxAttempts)
		require.Empty(t, j.Key)
		requireBetween(t, j.NextRunAt, before, after, "next_run_at")
		requireBetween(t, j.CreatedAt, before, after, "created_at")
		claimed := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Equal(t, []int64{j.ID}, ids(claimed))

		// A plain INSERT of a taken key fails on the unique index instead of
		// creating a second job.
		b.insertOne(keyed("t", "sql-key", sluicetype.DedupePermanent))
		_, err = b.d.DB().ExecContext(b.ctx, "INSERT INTO "+table+" (type, business_key) VALUES ('plain-sql', 'sql-key')")
		require.Error(t, err)
	})

	t.Run("RejectsInvalidJSONPayload", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Handlers are promised JSON. A payload column that stores anything
		// would let one driver accept what the others refuse, and hand a
		// worker a payload it cannot parse.
		p := newJob("bad-json")
		p.Payload = []byte(`{"unterminated": `)
		_, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: []driver.InsertJob{newJob("ok"), p}})
		require.Error(t, err, "an invalid JSON payload was stored")
		require.Empty(t, b.listAll(sluicetype.ListParams{}))
	})

	t.Run("EmptyInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: nil})
		require.NoError(t, err)
		require.Empty(t, res)
	})
}
