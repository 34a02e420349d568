package drivertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseBulkActions covers the payload filter of listings and the bulk
// retry, cancel and delete of a filtered set, with their bounded count.
func exerciseBulkActions(t *testing.T, open Opener) {
	t.Run("PayloadFilter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		mk := func(typ, payload string) int64 {
			p := newJob(typ)
			p.Payload = []byte(payload)
			return b.insertOne(p)
		}
		num := mk("order", `{"customer":{"id":42},"tier":"gold","vip":true}`)
		str := mk("order", `{"customer":{"id":"42"},"tier":"silver","vip":false}`)
		other := mk("order", `{"customer":{"id":7},"tier":"gold"}`)
		mail := mk("mail", `{"customer":{"id":42},"to":"a@example.com"}`)
		mk("order", `{"tier":"it's \"quoted\""}`)
		list := func(p sluicetype.ListParams) []int64 {
			t.Helper()
			jobs, err := b.d.ListJobs(b.ctx, p)
			require.NoError(t, err)
			return ids(jobs)
		}
		// Numbers and strings compare as their text.
		require.Equal(t, []int64{mail, str, num}, list(sluicetype.ListParams{PayloadField: "customer.id", PayloadValue: "42"}))
		require.Equal(t, []int64{str, num}, list(sluicetype.ListParams{Type: "order", PayloadField: "customer.id", PayloadValue: "42"}))
		require.Equal(t, []int64{other, num}, list(sluicetype.ListParams{PayloadField: "tier", PayloadValue: "gold"}))
		require.Equal(t, []int64{num}, list(sluicetype.ListParams{PayloadField: "vip", PayloadValue: "true"}))
		require.Equal(t, []int64{str}, list(sluicetype.ListParams{PayloadField: "vip", PayloadValue: "false"}))
		require.Empty(t, list(sluicetype.ListParams{PayloadField: "customer.name", PayloadValue: "42"}))
		require.Empty(t, list(sluicetype.ListParams{PayloadField: "customer", PayloadValue: "42"}), "an object is not its member")
		// Keyset pages go on below AfterID.
		require.Equal(t, []int64{str, num}, list(sluicetype.ListParams{PayloadField: "customer.id", PayloadValue: "42", AfterID: mail}))
		require.Equal(t, []int64{str}, list(sluicetype.ListParams{PayloadField: "customer.id", PayloadValue: "42", Limit: 1, AfterID: mail}))
		require.True(t, sluicetype.ValidPayloadField("customer.id_2"))
		for _, bad := range []string{"", "a..b", ".a", "a.", "a'b", "a b", "$.a", "a[0]"} {
			require.False(t, sluicetype.ValidPayloadField(bad), bad)
		}
	})

	t.Run("PayloadScanIsBounded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("scan")
		p.Payload = []byte(`{"n":"needle"}`)
		old := b.insertOne(p)
		b.insert(newJobs("scan", sluicetype.PayloadScan)...)
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{PayloadField: "n", PayloadValue: "needle"})
		require.NoError(t, err)
		require.Empty(t, jobs, "the match is older than the newest PayloadScan jobs")
		jobs, err = b.d.ListJobs(b.ctx, sluicetype.ListParams{PayloadField: "n", PayloadValue: "needle", AfterID: old + 5})
		require.NoError(t, err)
		require.Equal(t, []int64{old}, ids(jobs), "paging on reaches it")
	})

	t.Run("RetryCancelDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		mk := func(status sluicetype.Status, typ, key string) int64 {
			p := newJob(typ)
			p.Key = key
			if key != "" {
				p.Dedupe = sluicetype.DedupeActive
			}
			return b.makeJob(status, p).ID
		}
		// Claimed states first: makeJob claims the oldest pending job of
		// its queue and type.
		proc := mk(sluicetype.StatusProcessing, "x", "")
		f1 := mk(sluicetype.StatusFailed, "x", "k:1")
		f2 := mk(sluicetype.StatusFailed, "x", "k:2")
		c1 := mk(sluicetype.StatusCancelled, "y", "")
		ok := mk(sluicetype.StatusSuccess, "x", "")
		fy := mk(sluicetype.StatusFailed, "y", "")
		status := func(id int64) sluicetype.Status { return b.get(id).Status }

		count := func(p driver.BulkParams) sluicetype.BulkCount {
			t.Helper()
			c, err := b.d.CountBulk(b.ctx, p)
			require.NoError(t, err)
			return c
		}
		retryX := driver.BulkParams{Action: sluicetype.BulkRetry, Filter: sluicetype.ListParams{Type: "x"}}
		c := count(retryX)
		require.Equal(t, sluicetype.BulkCount{Count: 2, UpTo: f2}, c)
		require.Equal(t, sluicetype.BulkCount{Count: 4, UpTo: fy}, count(driver.BulkParams{Action: sluicetype.BulkRetry}), "failed and cancelled")
		require.Equal(t, sluicetype.BulkCount{Count: 1, UpTo: f1}, count(driver.BulkParams{Action: sluicetype.BulkRetry, Filter: sluicetype.ListParams{KeyPrefix: "k:1"}}))
		require.Equal(t, sluicetype.BulkCount{}, count(driver.BulkParams{Action: sluicetype.BulkRetry, Filter: sluicetype.ListParams{Status: sluicetype.StatusSuccess}}),
			"a status the action does not apply to selects nothing")
		_, err := b.d.CountBulk(b.ctx, driver.BulkParams{Action: "explode"})
		require.ErrorContains(t, err, "explode")

		// A job failing after the count is above UpTo and left alone; the
		// key of f2 is taken by a new active job, so f2 is skipped.
		late := mk(sluicetype.StatusFailed, "x", "")
		b.insertOne(keyed("x", "k:2", sluicetype.DedupeActive))
		pend := mk(sluicetype.StatusPending, "x", "")
		retryX.UpTo = c.UpTo
		n, err := b.d.Bulk(b.ctx, retryX)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, sluicetype.StatusPending, status(f1))
		require.Equal(t, sluicetype.StatusFailed, status(f2), "its key is held by another active job")
		require.Equal(t, sluicetype.StatusFailed, status(late), "failed after the count")
		require.Equal(t, sluicetype.StatusFailed, status(fy), "another type")

		// Cancel type y: the failed one; the cancelled one is already.
		n, err = b.d.Bulk(b.ctx, driver.BulkParams{Action: sluicetype.BulkCancel, Filter: sluicetype.ListParams{Type: "y"}})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, sluicetype.StatusCancelled, status(fy))
		require.Equal(t, sluicetype.StatusCancelled, status(c1))

		// Delete every x job but the processing one.
		require.EqualValues(t, 6, count(driver.BulkParams{Action: sluicetype.BulkDelete, Filter: sluicetype.ListParams{Type: "x"}}).Count)
		n, err = b.d.Bulk(b.ctx, driver.BulkParams{Action: sluicetype.BulkDelete, Filter: sluicetype.ListParams{Type: "x"}})
		require.NoError(t, err)
		require.EqualValues(t, 6, n)
		left, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{proc, c1, fy}, ids(left))
		for _, id := range []int64{f1, f2, ok, pend, late} {
			_, err := b.d.GetJob(b.ctx, id)
			require.ErrorIs(t, err, sluicetype.ErrNotFound)
		}
	})

	t.Run("FilteredBulkIsBounded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		old := b.insertOne(newJob("rare"))
		b.insert(newJobs("common", sluicetype.BulkScan)...)
		_, err := b.d.DB().ExecContext(b.ctx, "UPDATE "+b.jobsTable()+" SET status = 'cancelled', finished_at = updated_at")
		require.NoError(t, err)
		rare := driver.BulkParams{Action: sluicetype.BulkRetry, Filter: sluicetype.ListParams{Type: "rare"}}
		c, err := b.d.CountBulk(b.ctx, rare)
		require.NoError(t, err)
		require.Zero(t, c.Count, "the rare job is older than the newest BulkScan of its status")
		c, err = b.d.CountBulk(b.ctx, driver.BulkParams{Action: sluicetype.BulkRetry, UpTo: old})
		require.NoError(t, err)
		require.EqualValues(t, 1, c.Count, "without a filter the status index reaches it")
		rare.UpTo = old
		c, err = b.d.CountBulk(b.ctx, rare)
		require.NoError(t, err)
		require.EqualValues(t, 1, c.Count, "below UpTo the window reaches it")
	})

	t.Run("PayloadBulk", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var gold []int64
		for i := range 4 {
			p := newJob("order")
			p.Payload = []byte(`{"tier":"silver"}`)
			if i%2 == 0 {
				p.Payload = []byte(`{"tier":"gold"}`)
			}
			id := b.insertOne(p)
			if i%2 == 0 {
				gold = append(gold, id)
			}
		}
		sel := driver.BulkParams{Action: sluicetype.BulkCancel, Filter: sluicetype.ListParams{PayloadField: "tier", PayloadValue: "gold"}}
		c, err := b.d.CountBulk(b.ctx, sel)
		require.NoError(t, err)
		require.EqualValues(t, 2, c.Count)
		n, err := b.d.Bulk(b.ctx, sel)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Status: sluicetype.StatusCancelled})
		require.NoError(t, err)
		require.ElementsMatch(t, gold, ids(jobs))
	})
}
