package drivertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseBulk holds drivers to bulk inserts that overlap: writers that
// insert the same business keys in different orders must all succeed. A
// driver that takes key locks in input order lets two such batches wait on
// each other until the database kills one as a deadlock victim; inside a
// caller's transaction (EnqueueManyTx, `sluice enqueue --ndjson`) that
// victim cannot even be retried by the driver.
func exerciseBulk(t *testing.T, open Opener) {
	t.Run("ShuffledOverlappingBatches", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const writers, keys = 8, 1000
		results := make([][]driver.InsertResult, writers)
		orders := make([][]int, writers)
		batches := make([][]driver.InsertJob, writers)
		for w := range writers {
			orders[w] = rand.Perm(keys)
			for n, k := range orders[w] {
				batches[w] = append(batches[w], keyed("bulk", fmt.Sprintf("bulk-%04d", k), sluicetype.DedupePermanent))
				if n%10 == 0 {
					// Keyless rows among the keyed ones must keep their
					// own results.
					batches[w] = append(batches[w], newJob("bulk-keyless"))
				}
			}
		}
		racetest.Run(t, writers, func(w int) (err error) {
			// Half the writers give their own transaction, as
			// EnqueueManyTx does; the others let the driver run one.
			ps := batches[w]
			if w%2 == 0 {
				results[w], err = insertInTx(b.ctx, b.d, ps)
			} else {
				results[w], err = b.d.Insert(b.ctx, driver.InsertParams{Jobs: ps})
			}
			if err == nil && len(results[w]) != len(ps) {
				err = fmt.Errorf("insert returned %d results for %d jobs", len(results[w]), len(ps))
			}
			return err
		})

		// Every key has one id, reported to every writer at the position
		// of its own row, and exactly one writer inserted it.
		idOf := map[int]int64{}
		inserted := map[int]int{}
		keyless := map[int64]bool{}
		for w := range writers {
			pos := 0
			for n, k := range orders[w] {
				r := results[w][pos]
				pos++
				if id, ok := idOf[k]; ok {
					require.Equal(t, id, r.ID, "writer %d, key %d", w, k)
				}
				idOf[k] = r.ID
				if !r.Duplicate {
					inserted[k]++
				}
				if n%10 == 0 {
					kl := results[w][pos]
					pos++
					require.False(t, kl.Duplicate, "a row without a key is never a duplicate")
					require.False(t, keyless[kl.ID], "keyless id %d reported twice", kl.ID)
					keyless[kl.ID] = true
				}
			}
		}
		for k := range keys {
			require.Equal(t, 1, inserted[k], "key %d inserted %d times", k, inserted[k])
		}
		for k, id := range idOf {
			j, err := b.d.GetJob(b.ctx, id)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("bulk-%04d", k), j.Key)
		}
		for id := range keyless {
			j, err := b.d.GetJob(b.ctx, id)
			require.NoError(t, err)
			require.Equal(t, "bulk-keyless", j.Type)
		}
	})

	t.Run("DuplicateKeysInOneBatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Keys out of order, repeated, with keyless rows between: the first
		// occurrence of each key in input order is the one inserted.
		ps := []driver.InsertJob{
			keyed("dup", "k-b", sluicetype.DedupePermanent),
			newJob("none-1"),
			keyed("dup", "k-a", sluicetype.DedupePermanent),
			keyed("dup", "k-b", sluicetype.DedupePermanent),
			newJob("none-2"),
			keyed("dup", "k-a", sluicetype.DedupePermanent),
		}
		ps[0].Payload = []byte(`{"first":"b"}`)
		ps[2].Payload = []byte(`{"first":"a"}`)
		res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: ps})
		require.NoError(t, err)
		require.Len(t, res, len(ps))
		require.Equal(t, []bool{false, false, false, true, false, true},
			[]bool{res[0].Duplicate, res[1].Duplicate, res[2].Duplicate, res[3].Duplicate, res[4].Duplicate, res[5].Duplicate})
		require.Equal(t, res[0].ID, res[3].ID)
		require.Equal(t, res[2].ID, res[5].ID)
		for i, want := range []struct{ typ, payload string }{
			{"dup", `{"first":"b"}`}, {"none-1", `{}`}, {"dup", `{"first":"a"}`}, {"none-2", `{}`},
		} {
			id := []int64{res[0].ID, res[1].ID, res[2].ID, res[4].ID}[i]
			j, err := b.d.GetJob(b.ctx, id)
			require.NoError(t, err)
			require.Equal(t, want.typ, j.Type)
			require.JSONEq(t, want.payload, string(j.Payload))
		}
		// The keyless rows keep their input order among themselves.
		require.Less(t, res[1].ID, res[4].ID)
	})
}

// insertInTx runs one Insert inside a transaction of the caller's, as
// EnqueueManyTx does.
func insertInTx(ctx context.Context, d driver.Driver, ps []driver.InsertJob) ([]driver.InsertResult, error) {
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	res, err := d.Insert(ctx, driver.InsertParams{Tx: tx, Jobs: ps})
	if err != nil {
		return nil, err
	}
	return res, tx.Commit()
}
