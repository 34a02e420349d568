package sluice_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCircuitHandsBackUncharged: a job of a type whose circuit is open (by
// hand here) never runs and is not charged; it waits pending until the
// circuit closes, then runs. A type's K-th transient failure opens its
// circuit, and the jobs behind it then wait uncharged too.
func TestCircuitHandsBackUncharged(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var ran, failing atomic.Int32
		breaker := sluice.Circuit{Threshold: 2, Cooldown: time.Hour, MaxCooldown: time.Hour}
		c := startClient(t, d, 2, map[string]sluice.Type{
			"api": {Circuit: breaker, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				ran.Add(1)
				return nil
			})},
			"down": {Circuit: breaker, Backoff: fastRetry, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				failing.Add(1)
				return errors.New("503")
			})},
			"plain": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error { return nil })},
		})
		_, err := c.OpenCircuit(ctx, "plain")
		require.Error(t, err, "a type without a breaker cannot be opened: nothing would check it")

		_, err = c.OpenCircuit(ctx, "api")
		require.NoError(t, err)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "api"})
		require.NoError(t, err)
		testdb.WaitFor(t, 10*time.Second, "the job handed back while the circuit is open", func() bool {
			j, err := d.GetJob(ctx, r.ID)
			require.NoError(t, err)
			// Claimed, then handed back for a few seconds.
			return j.Status == sluicetype.StatusPending && j.NextRunAt.After(j.CreatedAt.Add(time.Second))
		})
		j, err := d.GetJob(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Zero(t, j.Attempts, "no attempt is charged while the circuit is open")
		require.Zero(t, ran.Load())

		_, err = c.CloseCircuit(ctx, "api")
		require.NoError(t, err)
		// Handed back for at most 5 s while open by hand.
		j = waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		require.Equal(t, 1, j.Attempts)

		var ids []int64
		for i := 0; i < 6; i++ {
			r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "down"})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		testdb.WaitFor(t, 10*time.Second, "the circuit open", func() bool {
			cs, err := d.Circuit(ctx, driver.CircuitParams{Type: "down"})
			require.NoError(t, err)
			return cs.State == sluicetype.CircuitOpen
		})
		charged := 0
		testdb.WaitFor(t, 10*time.Second, "the claimed jobs handed back", func() bool {
			// Jobs claimed when it opened go back; none is left running.
			charged = 0
			for _, id := range ids {
				j, err := d.GetJob(ctx, id)
				require.NoError(t, err)
				if j.Status != sluicetype.StatusPending {
					return false
				}
				charged += j.Attempts
			}
			return true
		})
		calls := failing.Load()
		// Two failures open it; the other worker slot may have had one
		// more attempt past its check.
		require.LessOrEqual(t, calls, int32(2+1), "calls after the circuit opened")
		require.Equal(t, int(calls), charged, "only the attempts that ran are charged")
	})
}
