package drivertest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func exerciseList(t *testing.T, open Opener) {
	t.Run("FiltersNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		mk := func(status driver.Status, queue, typ, key string) int64 {
			p := newJob(typ)
			p.Queue, p.Key = queue, key
			return b.makeJob(status, p).ID
		}
		// Claimed states come before pending ones of the same queue and
		// type, so makeJob claims the job it means to.
		a := mk(driver.StatusFailed, "default", "email", "ord:1")
		c := mk(driver.StatusPending, "default", "email", "ord:2")
		d := mk(driver.StatusSuccess, "mail", "sms", "ordx:3")
		e := mk(driver.StatusPending, "mail", "email", "")
		f := mk(driver.StatusFailed, "mail", "sms", "other")
		g := mk(driver.StatusPending, "default", "sms", "ord:")

		list := func(p driver.ListParams) []int64 {
			t.Helper()
			jobs, err := b.d.ListJobs(b.ctx, p)
			require.NoError(t, err)
			return ids(jobs)
		}
		require.Equal(t, []int64{g, f, e, d, c, a}, list(driver.ListParams{}))
		require.Equal(t, []int64{g, e, c}, list(driver.ListParams{Status: driver.StatusPending}))
		require.Equal(t, []int64{f, e, d}, list(driver.ListParams{Queue: "mail"}))
		require.Equal(t, []int64{e, c, a}, list(driver.ListParams{Type: "email"}))
		require.Equal(t, []int64{g, c, a}, list(driver.ListParams{KeyPrefix: "ord:"}))
		require.Equal(t, []int64{g, d, c, a}, list(driver.ListParams{KeyPrefix: "ord"}))
		require.Equal(t, []int64{f}, list(driver.ListParams{Status: driver.StatusFailed, Queue: "mail", Type: "sms"}))
		require.Equal(t, []int64{a}, list(driver.ListParams{Status: driver.StatusFailed, KeyPrefix: "ord"}))
		require.Empty(t, list(driver.ListParams{Status: driver.StatusCancelled}))
		require.Equal(t, []int64{c, a}, list(driver.ListParams{KeyPrefix: "ord:", AfterID: g}))

		// The rows are whole.
		jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{Status: driver.StatusFailed, Queue: "mail"})
		require.NoError(t, err)
		require.Equal(t, []driver.JobRow{*b.get(f)}, jobs)
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
			jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{AfterID: after, Limit: 2})
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
		jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{Type: "page", Limit: 3})
		require.NoError(t, err)
		require.Equal(t, page[:3], ids(jobs))
		jobs, err = b.d.ListJobs(b.ctx, driver.ListParams{Type: "page", Limit: 3, AfterID: jobs[2].ID})
		require.NoError(t, err)
		require.Equal(t, page[3:], ids(jobs))
	})

	t.Run("KeyPrefixIsLiteral", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// LIKE wildcards in a prefix are plain characters.
		var byKey = map[string]int64{}
		for _, k := range []string{"50%off", "50xoff", "50%", "5", "a_1", "ab1", "a_"} {
			byKey[k] = b.insertOne(keyed("k", k, driver.DedupePermanent))
		}
		list := func(prefix string) []int64 {
			t.Helper()
			jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{KeyPrefix: prefix})
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
		lower := b.insertOne(keyed("k", "ord:1", driver.DedupePermanent))
		b.insertOne(keyed("k", "ORD:2", driver.DedupePermanent))
		jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{KeyPrefix: "ord:"})
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
		jobs, err := b.d.ListJobs(b.ctx, driver.ListParams{Type: "tx", Tx: tx})
		require.NoError(t, err)
		require.Equal(t, []int64{res[0].ID, committed}, ids(jobs), "the transaction sees its own uncommitted job")
		jobs, err = b.d.ListJobs(b.ctx, driver.ListParams{Type: "tx"})
		require.NoError(t, err)
		require.Equal(t, []int64{committed}, ids(jobs), "outside it, the job does not exist yet")
	})
}
