package drivertest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseList(t *testing.T, open Opener) {
	t.Run("FiltersNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		mk := func(status sluicetype.Status, queue, typ, key string) int64 {
			p := newJob(typ)
			p.Queue, p.Key = queue, key
			return b.makeJob(status, p).ID
		}
		// Claimed states come before pending ones of the same queue and
		// type, so makeJob claims the job it means to.
		a := mk(sluicetype.StatusFailed, "default", "email", "ord:1")
		c := mk(sluicetype.StatusPending, "default", "email", "ord:2")
		d := mk(sluicetype.StatusSuccess, "mail", "sms", "ordx:3")
		e := mk(sluicetype.StatusPending, "mail", "email", "")
		f := mk(sluicetype.StatusFailed, "mail", "sms", "other")
		g := mk(sluicetype.StatusPending, "default", "sms", "ord:")

		list := func(p sluicetype.ListParams) []int64 {
			t.Helper()
			jobs, err := b.d.ListJobs(b.ctx, p)
			require.NoError(t, err)
			return ids(jobs)
		}
		require.Equal(t, []int64{g, f, e, d, c, a}, list(sluicetype.ListParams{}))
		require.Equal(t, []int64{g, e, c}, list(sluicetype.ListParams{Status: sluicetype.StatusPending}))
		require.Equal(t, []int64{f, e, d}, list(sluicetype.ListParams{Queue: "mail"}))
		require.Equal(t, []int64{e, c, a}, list(sluicetype.ListParams{Type: "email"}))
		require.Equal(t, []int64{g, c, a}, list(sluicetype.ListParams{KeyPrefix: "ord:"}))
		require.Equal(t, []int64{g, d, c, a}, list(sluicetype.ListParams{KeyPrefix: "ord"}))
		require.Equal(t, []int64{f}, list(sluicetype.ListParams{Status: sluicetype.StatusFailed, Queue: "mail", Type: "sms"}))
		require.Equal(t, []int64{a}, list(sluicetype.ListParams{Status: sluicetype.StatusFailed, KeyPrefix: "ord"}))
		require.Empty(t, list(sluicetype.ListParams{Status: sluicetype.StatusCancelled}))
		require.Equal(t, []int64{c, a}, list(sluicetype.ListParams{KeyPrefix: "ord:", AfterID: g}))

		// The rows are whole.
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Status: sluicetype.StatusFailed, Queue: "mail"})
		require.NoError(t, err)
		require.Equal(t, []sluicetype.JobRow{*b.get(f)}, jobs)
	})

	t.Run("KeysetPagination", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var all []int64
		for i := range 7 {
			p := newJob("page")
			if i%3 == 0 {
				p.Type = "other"
			}
			all = append(all, b.insertOne(p))
		}
		slices.Reverse(all)

		var got []int64
		var pages int
		after := int64(0)
		for {
			jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{AfterID: after, Limit: 2})
			require.NoError(t, err)
			if len(jobs) == 0 {
				break
			}
			require.LessOrEqual(t, len(jobs), 2)
			pages++
			require.LessOrEqual(t, pages, 4, "more pages than rows allow: AfterID ignored?")
			got = append(got, ids(jobs)...)
			after = jobs[len(jobs)-1].ID
		}
		require.Equal(t, all, got)
		require.Equal(t, 4, pages)

		// Pagination with a filter pages over the filtered rows only.
		var page []int64
		for _, id := range all {
			if b.get(id).Type == "page" {
				page = append(page, id)
			}
		}
		require.Len(t, page, 4)
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "page", Limit: 3})
		require.NoError(t, err)
		require.Equal(t, page[:3], ids(jobs))
		jobs, err = b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "page", Limit: 3, AfterID: jobs[2].ID})
		require.NoError(t, err)
		require.Equal(t, page[3:], ids(jobs))
	})

	t.Run("KeyPrefixIsLiteral", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// LIKE wildcards in a prefix are plain characters.
		var byKey = map[string]int64{}
		for _, k := range []string{"50%off", "50xoff", "50%", "5", "a_1", "ab1", "a_"} {
			byKey[k] = b.insertOne(keyed("k", k, sluicetype.DedupePermanent))
		}
		list := func(prefix string) []int64 {
			t.Helper()
			jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{KeyPrefix: prefix})
			require.NoError(t, err)
			return ids(jobs)
		}
		require.Equal(t, []int64{byKey["50%"], byKey["50%off"]}, list("50%"))
		require.Equal(t, []int64{byKey["a_"], byKey["a_1"]}, list("a_"))
		require.Empty(t, list("zz"))
	})

	t.Run("KeyPrefixIsCaseSensitive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		lower := b.insertOne(keyed("k", "ord:1", sluicetype.DedupePermanent))
		b.insertOne(keyed("k", "ORD:2", sluicetype.DedupePermanent))
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{KeyPrefix: "ord:"})
		require.NoError(t, err)
		require.Equal(t, []int64{lower}, ids(jobs))
	})

	t.Run("InCallersTransaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		committed := b.insertOne(newJob("tx"))
		tx, err := b.d.DB().BeginTx(b.ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		res, err := b.d.Insert(b.ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{newJob("tx")}})
		require.NoError(t, err)
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "tx", Tx: tx})
		require.NoError(t, err)
		require.Equal(t, []int64{res[0].ID, committed}, ids(jobs), "the transaction sees its own uncommitted job")
		jobs, err = b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "tx"})
		require.NoError(t, err)
		require.Equal(t, []int64{committed}, ids(jobs), "outside it, the job does not exist yet")
	})
}
