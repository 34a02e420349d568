package drivertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func exerciseConcurrency(t *testing.T, open Opener) {
	t.Run("ConcurrentInsertsOfSameKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const workers, keys, batch = 16, 1000, 10
		results := make([][]driver.InsertResult, workers) // [worker][key]
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			results[w] = make([]driver.InsertResult, keys)
			wg.Go(func() {
				// Each worker walks the key space in its own order, so every
				// key is raced by all workers at different times.
				for _, start := range rand.Perm(keys / batch) {
					ps := make([]driver.InsertParams, batch)
					for i := range ps {
						mode := driver.DedupePermanent
						if w%2 == 1 {
							// Half the callers ask for active mode: while the
							// job is pending both modes block the key.
							mode = driver.DedupeActive
						}
						ps[i] = keyed("race", fmt.Sprintf("key-%04d", start*batch+i), mode)
					}
					res, err := b.d.Insert(b.ctx, nil, ps)
					if err == nil && len(res) != batch {
						err = fmt.Errorf("insert returned %d results for %d jobs", len(res), batch)
					}
					if err != nil {
						errs[w] = err
						return
					}
					copy(results[w][start*batch:], res)
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))

		fresh := 0
		for k := range keys {
			id := results[0][k].ID
			winners := 0
			for w := range workers {
				r := results[w][k]
				require.Equal(t, id, r.ID, "key %d: worker %d got id %d, worker 0 got %d", k, w, r.ID, id)
				if !r.Duplicate {
					winners++
				}
			}
			require.Equal(t, 1, winners, "key %d: %d inserts reported a new job", k, winners)
			fresh += winners
		}
		require.Equal(t, keys, fresh)

		rows := b.listAll(driver.ListParams{})
		require.Len(t, rows, keys)
		seenKey := map[string]bool{}
		for _, j := range rows {
			require.False(t, seenKey[j.Key], "two rows with key %s", j.Key)
			seenKey[j.Key] = true
		}
	})

	t.Run("ConcurrentClaimAndComplete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const jobs, workers, batch = 5000, 8, 50
		ps := make([]driver.InsertParams, jobs)
		for i := range ps {
			ps[i] = newJob("work")
			ps[i].Payload = jsonPayload(i)
		}
		inserted := map[int64]bool{}
		for _, r := range b.insert(ps...) {
			inserted[r.ID] = true
		}
		require.Len(t, inserted, jobs)

		var (
			mu      sync.Mutex
			claimed = map[int64]int{}
			lost    []int64
			done    atomic.Int64
			errs    = make([]error, workers)
			wg      sync.WaitGroup
		)
		// A claim can come back empty while other workers hold rows in an
		// open transaction (SKIP LOCKED), so workers stop on the shared count
		// of completed jobs, not on their first empty claim.
		deadline := time.Now().Add(2 * time.Minute)
		for w := range workers {
			wg.Go(func() {
				for done.Load() < jobs {
					if time.Now().After(deadline) {
						errs[w] = fmt.Errorf("worker %d: %d of %d jobs done at the deadline", w, done.Load(), jobs)
						return
					}
					tok := newToken()
					got, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: batch, Lease: time.Minute, Token: tok})
					if err != nil {
						errs[w] = fmt.Errorf("worker %d: claim: %w", w, err)
						return
					}
					if len(got) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					cs := make([]driver.Completion, len(got))
					for i, j := range got {
						cs[i] = driver.Completion{ID: j.ID, Token: tok, Status: driver.StatusSuccess}
					}
					l, err := b.d.Complete(b.ctx, cs)
					if err != nil {
						errs[w] = fmt.Errorf("worker %d: complete: %w", w, err)
						return
					}
					mu.Lock()
					for _, j := range got {
						claimed[j.ID]++
					}
					lost = append(lost, l...)
					mu.Unlock()
					done.Add(int64(len(got) - len(l)))
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.Empty(t, lost, "completions lost with no rescue running")
		require.Len(t, claimed, jobs)
		for id, n := range claimed {
			require.True(t, inserted[id], "claimed unknown job %d", id)
			require.Equal(t, 1, n, "job %d claimed %d times", id, n)
		}

		rows := b.listAll(driver.ListParams{Status: driver.StatusSuccess})
		require.Len(t, rows, jobs)
		for _, j := range rows {
			require.Equal(t, 1, j.Attempts, "job %d", j.ID)
		}
		stats, err := b.d.Stats(b.ctx)
		require.NoError(t, err)
		require.Empty(t, stats, "jobs left pending or processing")
	})

	t.Run("ConcurrentLeaseAcquire", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const contenders = 8
		leases := make([]driver.Lease, contenders)
		errs := make([]error, contenders)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range contenders {
			wg.Go(func() {
				<-start
				leases[i], errs[i] = b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "leader", Holder: fmt.Sprintf("node-%d", i), TTL: time.Minute})
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errors.Join(errs...))

		var winner string
		for i, l := range leases {
			if l.Held {
				require.Empty(t, winner, "both %s and node-%d hold the lease", winner, i)
				winner = l.Holder
				require.Equal(t, fmt.Sprintf("node-%d", i), l.Holder)
			}
		}
		require.NotEmpty(t, winner, "nobody got a free lease")
		for i, l := range leases {
			require.Equal(t, winner, l.Holder, "node-%d sees holder %q", i, l.Holder)
		}
	})
}
