package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func exerciseInsert(t *testing.T, open Opener) {
	t.Run("EnqueueCreatesPending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("email", "order-17", driver.DedupeActive)
		p.Queue, p.Payload, p.Priority, p.MaxAttempts = "mail", []byte(`{"to": "ana@example.com", "n": [1, 2]}`), 3, 7
		before := b.now()
		id := b.insertOne(p)
		after := b.now()

		j := b.get(id)
		require.Equal(t, "mail", j.Queue)
		require.Equal(t, "email", j.Type)
		require.Equal(t, "order-17", j.Key)
		require.Equal(t, driver.DedupeActive, j.Dedupe)
		require.JSONEq(t, string(p.Payload), string(j.Payload))
		require.Equal(t, driver.StatusPending, j.Status)
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
		pre := b.insert(keyed("bulk", "dup-0", driver.DedupePermanent), keyed("bulk", "uniq-6", driver.DedupePermanent))
		const n = 2500
		ps := make([]driver.InsertParams, n)
		for i := range ps {
			p := newJob(fmt.Sprintf("bulk-%d", i%3))
			p.Payload, p.Priority = jsonPayload(i), i%4
			switch {
			case i%5 == 0:
				p.Key = fmt.Sprintf("dup-%d", i/5%40)
			case i%5 == 1:
				p.Key = fmt.Sprintf("uniq-%d", i)
			case i%5 == 2:
				p.Key, p.Dedupe = fmt.Sprintf("active-%d", i), driver.DedupeActive
			}
			ps[i] = p
		}
		res := b.insert(ps...)

		firstOf := map[string]int64{"dup-0": pre[0].ID, "uniq-6": pre[1].ID}
		seen := map[int64]bool{}
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
			j := b.get(r.ID)
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
		require.Len(t, b.listAll(driver.ListParams{}), want+2)
	})

	t.Run("TxRollbackLeavesNoRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		res, err := b.d.Insert(b.ctx, tx, []driver.InsertParams{keyed("tx", "tx-key", driver.DedupePermanent), newJob("tx")})
		require.NoError(t, err)
		require.Len(t, res, 2)
		require.NoError(t, tx.Rollback())

		for _, r := range res {
			_, err := b.d.GetJob(b.ctx, r.ID)
			requireNotFound(t, err)
		}
		require.Empty(t, b.listAll(driver.ListParams{}))
		// The key went with the rollback.
		b.insertOne(keyed("tx", "tx-key", driver.DedupePermanent))
	})

	t.Run("TxCommitKeepsRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		res, err := b.d.Insert(b.ctx, tx, []driver.InsertParams{keyed("tx", "tx-key", driver.DedupePermanent), keyed("tx", "tx-key", driver.DedupePermanent)})
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		require.Equal(t, driver.InsertResult{ID: res[0].ID, Duplicate: true}, res[1])
		require.NoError(t, tx.Commit())

		require.Equal(t, driver.StatusPending, b.get(res[0].ID).Status)
		require.Equal(t, []driver.InsertResult{{ID: res[0].ID, Duplicate: true}}, b.insert(keyed("tx", "tx-key", driver.DedupePermanent)))
	})

	t.Run("BatchIsAllOrNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		bad := newJob(strings.Repeat("t", driver.MaxTypeLen+1))
		_, err := b.d.Insert(b.ctx, nil, []driver.InsertParams{keyed("ok", "k1", driver.DedupePermanent), newJob("ok"), bad})
		require.Error(t, err, "a type longer than %d characters was accepted", driver.MaxTypeLen)
		require.Empty(t, b.listAll(driver.ListParams{}), "a failed batch left rows behind")
		// Nor did it leave k1 taken.
		b.insertOne(keyed("ok", "k1", driver.DedupePermanent))
	})

	t.Run("ColumnLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// The longest allowed values fit exactly, unchanged.
		p := keyed(strings.Repeat("t", driver.MaxTypeLen), strings.Repeat("k", driver.MaxKeyLen), driver.DedupePermanent)
		p.Queue = strings.Repeat("q", driver.MaxQueueLen)
		j := b.get(b.insertOne(p))
		require.Equal(t, p.Queue, j.Queue)
		require.Equal(t, p.Type, j.Type)
		require.Equal(t, p.Key, j.Key)

		// One more character fails the same way everywhere, never silently
		// truncating (which would make two keys collide).
		for name, mod := range map[string]func(*driver.InsertParams){
			"queue": func(p *driver.InsertParams) { p.Queue = strings.Repeat("q", driver.MaxQueueLen+1) },
			"type":  func(p *driver.InsertParams) { p.Type = strings.Repeat("t", driver.MaxTypeLen+1) },
			"key":   func(p *driver.InsertParams) { p.Key = strings.Repeat("x", driver.MaxKeyLen+1) },
		} {
			p := newJob("limits")
			mod(&p)
			_, err := b.d.Insert(b.ctx, nil, []driver.InsertParams{p})
			require.Error(t, err, "over-long %s was accepted", name)
		}
		require.Len(t, b.listAll(driver.ListParams{}), 1)
	})

	t.Run("EmptyInsert", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		res, err := b.d.Insert(b.ctx, nil, nil)
		require.NoError(t, err)
		require.Empty(t, res)
	})
}
