package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseDedupe(t *testing.T, open Opener) {
	t.Run("PermanentBlocksForever", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("charge", "order-1", sluicetype.DedupePermanent)
		id, tok := b.claimKeyed(p)

		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
		b.requireDuplicate(p, id, "after success")

		// Another job with another payload and type is still the same key.
		other := keyed("refund", "order-1", sluicetype.DedupePermanent)
		other.Payload = []byte(`{"x": 1}`)
		b.requireDuplicate(other, id)

		j := b.get(id)
		require.Equal(t, sluicetype.StatusSuccess, j.Status, "a duplicate insert touched the stored job")
		require.Equal(t, "charge", j.Type)
		require.Len(t, b.listAll(sluicetype.ListParams{}), 1)
	})

	t.Run("PermanentAfterFailureAndCancel", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		failed := b.makeJob(sluicetype.StatusFailed, keyed("a", "failed-key", sluicetype.DedupePermanent))
		cancelled := b.makeJob(sluicetype.StatusCancelled, keyed("b", "cancelled-key", sluicetype.DedupePermanent))
		require.Equal(t, []driver.InsertResult{{ID: failed.ID, Duplicate: true}, {ID: cancelled.ID, Duplicate: true}},
			b.insert(keyed("a", "failed-key", sluicetype.DedupePermanent), keyed("b", "cancelled-key", sluicetype.DedupePermanent)))
	})

	t.Run("ActiveBlocksOnlyWhileLive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("sync", "user-9", sluicetype.DedupeActive)
		id, tok := b.claimKeyed(p)

		// A retry outcome puts it back to pending: still live.
		require.Empty(t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusPending, Delay: time.Hour}))
		b.requireDuplicate(p, id, "while pending for a retry")

		// Once finished, the key is free for a new job with a new id.
		require.NoError(t, b.cancel(id))
		id2 := b.insertOne(p)
		require.NotEqual(t, id, id2)
		b.requireDuplicate(p, id2, "the new job holds the key now")

		_, tok = b.claimOne(p, id2, time.Minute)
		require.Empty(t, b.complete(driver.Completion{ID: id2, Token: tok, Status: sluicetype.StatusSuccess}))
		id3 := b.insertOne(p)
		require.NotEqual(t, id2, id3)

		_, tok = b.claimOne(p, id3, time.Minute)
		require.Empty(t, b.complete(driver.Completion{ID: id3, Token: tok, Status: sluicetype.StatusFailed}))
		id4 := b.insertOne(p)
		require.NotContains(t, []int64{id, id2, id3}, id4)

		// The old rows are kept as they were.
		require.Equal(t, sluicetype.StatusCancelled, b.get(id).Status)
		require.Equal(t, sluicetype.StatusSuccess, b.get(id2).Status)
		require.Equal(t, sluicetype.StatusFailed, b.get(id3).Status)
		require.Equal(t, sluicetype.StatusPending, b.get(id4).Status)
	})

	t.Run("FinishedPermanentBlocksActive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A permanent key blocks every new job until purged, whatever the
		// new job's own mode.
		done := b.makeJob(sluicetype.StatusSuccess, keyed("x", "shared", sluicetype.DedupePermanent))
		b.requireDuplicate(keyed("x", "shared", sluicetype.DedupeActive), done.ID)

		// A finished active job blocks nothing, not even a permanent one.
		old := b.makeJob(sluicetype.StatusSuccess, keyed("y", "other", sluicetype.DedupeActive))
		id := b.insertOne(keyed("y", "other", sluicetype.DedupePermanent))
		require.NotEqual(t, old.ID, id)
	})

	t.Run("WithinOneBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, mode := range []string{sluicetype.DedupePermanent, sluicetype.DedupeActive} {
			ka, kb := "a-"+mode, "b-"+mode
			res := b.insert(keyed("t", ka, mode), keyed("t", ka, mode), keyed("t", kb, mode), keyed("t", ka, mode), keyed("t", kb, mode))
			require.False(t, res[0].Duplicate, mode)
			require.False(t, res[2].Duplicate, mode)
			require.NotEqual(t, res[0].ID, res[2].ID, mode)
			require.Equal(t, driver.InsertResult{ID: res[0].ID, Duplicate: true}, res[1], mode)
			require.Equal(t, driver.InsertResult{ID: res[0].ID, Duplicate: true}, res[3], mode)
			require.Equal(t, driver.InsertResult{ID: res[2].ID, Duplicate: true}, res[4], mode)
			require.Equal(t, ka, b.get(res[0].ID).Key)
			require.Equal(t, kb, b.get(res[2].ID).Key)
		}
		require.Len(t, b.listAll(sluicetype.ListParams{}), 4)
	})

	t.Run("KeylessNeverDedupes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("plain")
		res := b.insert(p, p, p)
		res = append(res, b.insert(p)...)
		seen := map[int64]bool{}
		for i, r := range res {
			require.False(t, r.Duplicate, "keyless job %d reported as duplicate", i)
			require.False(t, seen[r.ID], "keyless job %d reused id %d", i, r.ID)
			seen[r.ID] = true
			require.Empty(t, b.get(r.ID).Key)
		}
		// Keyless jobs in active mode too.
		p.Dedupe = sluicetype.DedupeActive
		for _, r := range b.insert(p, p) {
			require.False(t, r.Duplicate)
		}
		require.Len(t, b.listAll(sluicetype.ListParams{}), 6)
	})

	t.Run("KeysCompareExactly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Business keys are opaque identifiers from the caller's system:
		// "Order-1" and "order-1" are different orders.
		res := b.insert(keyed("t", "order-1", sluicetype.DedupePermanent), keyed("t", "Order-1", sluicetype.DedupePermanent),
			keyed("t", "ORDER-1", sluicetype.DedupeActive))
		for i, r := range res {
			require.False(t, r.Duplicate, "key %d collided with a key that differs only in case", i)
		}
		require.Equal(t, "Order-1", b.get(res[1].ID).Key)

		// Nor do accents or Unicode normalisation fold keys together:
		// "café" composed (NFC) and decomposed (NFD) are different bytes.
		res = b.insert(keyed("t", "cafe", sluicetype.DedupePermanent), keyed("t", "caf\u00e9", sluicetype.DedupePermanent),
			keyed("t", "cafe\u0301", sluicetype.DedupePermanent))
		for i, r := range res {
			require.False(t, r.Duplicate, "key %d collided with a key that differs in accents or normalisation", i)
		}
		require.Equal(t, "cafe\u0301", b.get(res[2].ID).Key)
	})

	t.Run("KeysKeepTrailingSpaces", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A PAD SPACE collation would compare "k" and "k " equal and dedupe
		// two different keys into one job.
		res := b.insert(keyed("t", "k", sluicetype.DedupePermanent), keyed("t", "k ", sluicetype.DedupePermanent))
		require.False(t, res[0].Duplicate)
		require.False(t, res[1].Duplicate, `key "k " collided with "k"`)
		require.Equal(t, "k ", b.get(res[1].ID).Key)
	})

	t.Run("RetryRefusedWhileKeyTaken", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("sync", "user-3", sluicetype.DedupeActive)
		failed := b.makeJob(sluicetype.StatusFailed, p)
		live := b.insertOne(p)
		// Retrying the failed job would make two live jobs with one key.
		_, err := b.d.Retry(b.ctx, driver.RetryParams{ID: failed.ID})
		require.Error(t, err)
		require.Equal(t, sluicetype.StatusFailed, b.get(failed.ID).Status)
		require.Equal(t, sluicetype.StatusPending, b.get(live).Status)

		// Retrying all failed jobs skips it rather than failing the rest.
		other := b.makeJob(sluicetype.StatusFailed, keyed("other", "free-key", sluicetype.DedupeActive))
		n, err := b.d.Retry(b.ctx, driver.RetryParams{AllFailed: true})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, sluicetype.StatusFailed, b.get(failed.ID).Status)
		require.Equal(t, sluicetype.StatusPending, b.get(other.ID).Status)
	})
}

// claimKeyed inserts the keyed job p and claims it, requiring that its
// key is taken while it is pending and while it is processing, as both
// dedupe modes have it; it returns its id and the lease token.
func (b *bundle) claimKeyed(p driver.InsertJob) (int64, string) {
	b.t.Helper()
	id := b.insertOne(p)
	b.requireDuplicate(p, id, "while pending")
	_, tok := b.claimOne(p, id, time.Minute)
	b.requireDuplicate(p, id, "while processing")
	return id, tok
}
