package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// exerciseProbe checks that a driver.Prober sees a runnable job exactly
// when Claim would claim one: a probe that says no while a claim would
// succeed leaves jobs waiting for the slow poll, and one that says yes
// while a claim would find nothing makes idle workers claim on every
// probe.
func exerciseProbe(t *testing.T, open Opener) {
	t.Run("AgreesWithClaim", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Every SQL driver is a Prober (drivers_test.go asserts it at
		// compile time): PostgreSQL's too, for the workers that cannot
		// listen.
		pr, ok := b.d.(driver.Prober)
		if !ok {
			t.Fatalf("%s is no driver.Prober", b.d.Name())
		}
		runnable := func(queue, typ string) bool {
			t.Helper()
			ok, err := pr.Runnable(b.ctx, driver.RunnableParams{Queue: queue, Types: typeList(typ)})
			require.NoError(t, err)
			return ok
		}
		require.False(t, runnable("default", ""), "empty table")

		later := newJob("report")
		later.RunAt = b.now().Add(time.Hour)
		b.insertOne(later)
		elsewhere := newJob("report")
		elsewhere.Queue = "other"
		b.insertOne(elsewhere)
		require.False(t, runnable("default", ""), "only a job due in an hour and one in another queue")
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()}))

		id := b.insertOne(newJob("report"))
		require.True(t, runnable("default", ""), "a due pending job")
		require.True(t, runnable("default", "report"), "a due pending job of the type asked for")
		require.False(t, runnable("default", "email"), "a due pending job of another type only")
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Types: []string{"email"}, Limit: 10, Lease: time.Minute, Token: newToken()}))

		jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()})
		require.Len(t, jobs, 1)
		require.Equal(t, id, jobs[0].ID)
		require.False(t, runnable("default", ""), "the only due job is processing")
	})
}
