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
	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseConcurrency(t *testing.T, open Opener) {
	t.Run("ConcurrentInsertsOfSameKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const workers, keys, batch = 16, 1000, 10
		results := make([][]driver.InsertResult, workers) // [worker][key]
		racetest.Run(t, workers, func(w int) error {
			results[w] = make([]driver.InsertResult, keys)
			// Each worker walks the key space in its own order, so every
			// key is raced by all workers at different times.
			for _, start := range rand.Perm(keys / batch) {
				ps := make([]driver.InsertJob, batch)
				for i := range ps {
					mode := sluicetype.DedupePermanent
					if w%2 == 1 {
						// Half the callers ask for active mode: while the
						// job is pending both modes block the key.
						mode = sluicetype.DedupeActive
					}
					ps[i] = keyed("race", fmt.Sprintf("key-%04d", start*batch+i), mode)
				}
				res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: ps})
				if err == nil && len(res) != batch {
					err = fmt.Errorf("insert returned %d results for %d jobs", len(res), batch)
				}
				if err != nil {
					return err
				}
				copy(results[w][start*batch:], res)
			}
			return nil
		})

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

		rows := b.listAll(sluicetype.ListParams{})
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
		ps := make([]driver.InsertJob, jobs)
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
		)
		// A claim can come back empty while other workers hold rows in an
		// open transaction (SKIP LOCKED), so workers stop on the shared count
		// of completed jobs, not on their first empty claim.
		deadline := time.Now().Add(2 * time.Minute)
		racetest.Run(t, workers, func(w int) error {
			for done.Load() < jobs {
				if time.Now().After(deadline) {
					return fmt.Errorf("worker %d: %d of %d jobs done at the deadline", w, done.Load(), jobs)
				}
				tok := newToken()
				got, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: batch, Lease: time.Minute, Token: tok})
				if err != nil {
					return fmt.Errorf("worker %d: claim: %w", w, err)
				}
				if len(got) > batch {
					return fmt.Errorf("worker %d: claim returned %d jobs, limit %d", w, len(got), batch)
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				cs := make([]driver.Completion, len(got))
				for i, j := range got {
					cs[i] = driver.Completion{ID: j.ID, Token: tok, Status: sluicetype.StatusSuccess}
				}
				l, err := b.d.Complete(b.ctx, driver.CompleteParams{Completions: cs})
				if err != nil {
					return fmt.Errorf("worker %d: complete: %w", w, err)
				}
				mu.Lock()
				for _, j := range got {
					claimed[j.ID]++
				}
				lost = append(lost, l...)
				mu.Unlock()
				done.Add(int64(len(got) - len(l)))
			}
			return nil
		})
		require.Empty(t, lost, "completions lost with no rescue running")
		require.Len(t, claimed, jobs)
		for id, n := range claimed {
			require.True(t, inserted[id], "claimed unknown job %d", id)
			require.Equal(t, 1, n, "job %d claimed %d times", id, n)
		}

		rows := b.listAll(sluicetype.ListParams{Status: sluicetype.StatusSuccess})
		require.Len(t, rows, jobs)
		for _, j := range rows {
			require.Equal(t, 1, j.Attempts, "job %d", j.ID)
		}
		stats, err := b.d.Stats(b.ctx)
		require.NoError(t, err)
		require.Empty(t, stats, "jobs left pending or processing")
	})

	t.Run("ConcurrentRescueAndComplete", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Leases shorter than some handlers run, a rescuer sweeping all the
		// time and workers re-claiming rescued jobs: the fence must let
		// exactly one success through per job, whoever reports last.
		const jobs, workers = 300, 4
		ps := make([]driver.InsertJob, jobs)
		for i := range ps {
			ps[i] = newJob("racy")
			ps[i].MaxAttempts = 10000 // rescues must not exhaust attempts
		}
		b.insert(ps...)

		// winner records, per job, the attempt and token of each success
		// that got through.
		type winner struct {
			attempt int
			token   string
		}
		var (
			mu        sync.Mutex
			successes = map[int64]int{}
			winners   = map[int64]winner{}
			lostCount atomic.Int64
			errs      = make([]error, workers+1)
			wg        sync.WaitGroup
			stop      atomic.Bool
		)
		deadline := time.Now().Add(2 * time.Minute)
		doneCount := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(successes)
		}
		for w := range workers {
			wg.Go(func() {
				for doneCount() < jobs {
					if time.Now().After(deadline) {
						errs[w] = fmt.Errorf("worker %d: %d of %d jobs done at the deadline", w, doneCount(), jobs)
						return
					}
					// Half the batches outlive a short lease and race the
					// rescuer; the other half hold a long one, so the case
					// makes progress however slow the machine is.
					short := rand.IntN(2) == 0
					lease, work := 5*time.Second, time.Duration(0)
					if short {
						lease, work = 20*time.Millisecond, time.Duration(10+rand.IntN(40))*time.Millisecond
					}
					tok := newToken()
					got, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: 10, Lease: lease, Token: tok})
					if err != nil {
						errs[w] = fmt.Errorf("worker %d: claim: %w", w, err)
						return
					}
					if len(got) == 0 {
						time.Sleep(2 * time.Millisecond)
						continue
					}
					time.Sleep(work)
					cs := make([]driver.Completion, len(got))
					for i, j := range got {
						cs[i] = driver.Completion{ID: j.ID, Token: tok, Status: sluicetype.StatusSuccess, Result: strPtr(tok)}
					}
					lost, err := b.d.Complete(b.ctx, driver.CompleteParams{Completions: cs})
					if err != nil {
						errs[w] = fmt.Errorf("worker %d: complete: %w", w, err)
						return
					}
					isLost := map[int64]bool{}
					for _, id := range lost {
						isLost[id] = true
					}
					lostCount.Add(int64(len(lost)))
					mu.Lock()
					for _, j := range got {
						if !isLost[j.ID] {
							successes[j.ID]++
							winners[j.ID] = winner{j.Attempts, tok}
						}
					}
					mu.Unlock()
				}
			})
		}
		rescuerDone := make(chan struct{})
		go func() {
			defer close(rescuerDone)
			for !stop.Load() {
				if _, err := b.d.Rescue(b.ctx, driver.RescueParams{Limit: 100}); err != nil {
					errs[workers] = fmt.Errorf("rescue: %w", err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		wg.Wait()
		stop.Store(true)
		<-rescuerDone
		require.NoError(t, errors.Join(errs...))

		require.Len(t, successes, jobs)
		for id, n := range successes {
			require.Equal(t, 1, n, "job %d: %d successful completions got through the fence", id, n)
		}
		rows := b.listAll(sluicetype.ListParams{})
		require.Len(t, rows, jobs)
		for _, j := range rows {
			require.Equal(t, sluicetype.StatusSuccess, j.Status, "job %d", j.ID)
			// Only the holder of the last attempt may finish a job; a stale
			// worker whose success got through would show an older attempt.
			w := winners[j.ID]
			require.Equal(t, j.Attempts, w.attempt, "job %d was finished by the holder of attempt %d of %d", j.ID, w.attempt, j.Attempts)
			require.Equal(t, w.token, j.Result, "job %d", j.ID)
		}
		t.Logf("%d completions were fenced off as lost", lostCount.Load())
	})

	t.Run("ConcurrentActiveKeyChurn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Enqueuers race on one active-mode key while a worker keeps
		// finishing its holder, so the key is freed and taken again under
		// their feet: the paths where a holder vanishes mid-insert.
		const inserters, perInserter = 4, 150
		p := keyed("churn", "churn-key", sluicetype.DedupeActive)
		var (
			mu      sync.Mutex
			results []driver.InsertResult
			errs    = make([]error, inserters+1)
			wg      sync.WaitGroup
			stop    atomic.Bool
		)
		for w := range inserters {
			wg.Go(func() {
				for range perInserter {
					res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: []driver.InsertJob{p}})
					if err != nil {
						errs[w] = err
						return
					}
					mu.Lock()
					results = append(results, res...)
					mu.Unlock()
				}
			})
		}
		var finished atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				tok := newToken()
				got, err := b.d.Claim(b.ctx, driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: tok})
				if err == nil && len(got) == 1 {
					var lost []int64
					lost, err = b.d.Complete(b.ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: got[0].ID, Token: tok, Status: sluicetype.StatusSuccess}}})
					if err == nil && len(lost) > 0 {
						err = fmt.Errorf("lease of job %d lost with no rescue running", got[0].ID)
					}
					finished.Add(1)
				}
				if err != nil {
					errs[inserters] = err
					return
				}
			}
		}()
		wg.Wait()
		stop.Store(true)
		<-done
		require.NoError(t, errors.Join(errs...))

		rows := b.listAll(sluicetype.ListParams{})
		byID := map[int64]sluicetype.JobRow{}
		live := 0
		for _, j := range rows {
			byID[j.ID] = j
			require.Equal(t, "churn-key", j.Key)
			if j.Status == sluicetype.StatusPending || j.Status == sluicetype.StatusProcessing {
				live++
			}
		}
		require.LessOrEqual(t, live, 1, "two live jobs share an active key")
		fresh := 0
		for _, r := range results {
			_, ok := byID[r.ID]
			require.True(t, ok, "insert returned id %d, which is no job", r.ID)
			if !r.Duplicate {
				fresh++
			}
		}
		require.Equal(t, len(rows), fresh, "every row must be reported new exactly once")
		t.Logf("%d inserts made %d jobs; the worker finished %d", len(results), len(rows), finished.Load())
	})

	t.Run("ConcurrentLeaseAcquire", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const contenders = 8
		leases := make([]sluicetype.LeaseState, contenders)
		racetest.Run(t, contenders, func(i int) (err error) {
			leases[i], err = b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "leader", Holder: fmt.Sprintf("node-%d", i), TTL: time.Minute})
			return err
		})

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
