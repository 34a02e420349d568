package drivertest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseLimits checks the circuit breakers' transitions and the rate
// buckets, including under concurrent callers, since every node of a
// cluster shares them.
func exerciseLimits(t *testing.T, open Opener) {
	policy := driver.CircuitPolicy{Threshold: 3, Cooldown: 300 * time.Millisecond, MaxCooldown: time.Second}
	// The transitions' cool-downs are too long for any pause of a loaded
	// machine to end them; the test ends them by moving the stored time
	// (endCooldown), not by sleeping through them.
	hourly := driver.CircuitPolicy{Threshold: 3, Cooldown: time.Hour, MaxCooldown: 4 * time.Hour}

	t.Run("CircuitTransitions", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		get := func() sluicetype.Circuit {
			t.Helper()
			c, err := b.d.Circuit(b.ctx, driver.CircuitParams{Type: "email"})
			require.NoError(t, err)
			return c
		}
		record := func(failed bool, probe string) sluicetype.Circuit {
			t.Helper()
			c, err := b.d.RecordCircuit(b.ctx, driver.RecordCircuitParams{Type: "email", Failed: failed, Probe: probe, Policy: hourly})
			require.NoError(t, err)
			require.Equal(t, c, get(), "the returned state is the stored one")
			return c
		}
		probe := func(token string) bool {
			t.Helper()
			ok, err := b.d.ProbeCircuit(b.ctx, driver.ProbeCircuitParams{Type: "email", Token: token, TTL: time.Minute})
			require.NoError(t, err)
			return ok
		}
		// Opened by record at a database time between two reads of the
		// database's now, its cool-down ends cooldown after that.
		requireUntil := func(c sluicetype.Circuit, before, after time.Time, cooldown time.Duration, msg string) {
			t.Helper()
			require.False(t, c.Until.Before(before.Add(cooldown-clockSlack)), "%s: until %s, opened after %s", msg, c.Until, before)
			require.False(t, c.Until.After(after.Add(cooldown+clockSlack)), "%s: until %s, opened before %s", msg, c.Until, after)
		}
		require.Equal(t, sluicetype.CircuitClosed, get().State, "no row: closed")
		require.False(t, probe("early"), "a closed circuit has no probe")

		record(true, "")
		require.Equal(t, 2, record(true, "").Failures)
		c := record(false, "")
		require.Equal(t, sluicetype.CircuitClosed, c.State)
		require.Zero(t, c.Failures, "a success ends the run of failures")

		record(true, "")
		record(true, "")
		before := b.now()
		c = record(true, "")
		after := b.now()
		require.Equal(t, sluicetype.CircuitOpen, c.State, "the third consecutive failure opens")
		require.Equal(t, 1, c.Opens)
		requireUntil(c, before, after, hourly.Cooldown, "the first opening")
		require.False(t, probe("early"), "no probe during the cool-down")
		require.Equal(t, sluicetype.CircuitOpen, record(false, "").State, "a late success of an earlier attempt does not close")

		b.endCooldown("email")
		require.True(t, probe("p1"), "the cool-down is over")
		require.False(t, probe("p2"), "one probe at a time")
		require.Equal(t, sluicetype.CircuitHalfOpen, get().State)
		require.Equal(t, sluicetype.CircuitHalfOpen, record(true, "other").State, "only the probe's outcome counts")

		before = b.now()
		c = record(true, "p1")
		after = b.now()
		require.Equal(t, sluicetype.CircuitOpen, c.State, "a failed probe reopens")
		require.Equal(t, 2, c.Opens)
		requireUntil(c, before, after, 2*hourly.Cooldown, "with a doubled cool-down")
		require.False(t, probe("early"), "no probe during the second cool-down")

		b.endCooldown("email")
		require.True(t, probe("p3"))
		c = record(false, "p3")
		require.Equal(t, sluicetype.CircuitClosed, c.State, "a successful probe closes")
		require.Zero(t, c.Opens)
		require.Zero(t, c.Failures)

		c, err := b.d.SetCircuit(b.ctx, driver.SetCircuitParams{Type: "email", Open: true})
		require.NoError(t, err)
		require.Equal(t, sluicetype.CircuitOpen, c.State)
		require.True(t, c.Manual)
		require.False(t, probe("p4"), "a circuit opened by hand is not probed")
		list, err := b.d.ListCircuits(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "email", list[0].Type)
		require.True(t, list[0].Manual)
		c, err = b.d.SetCircuit(b.ctx, driver.SetCircuitParams{Type: "email", Open: false})
		require.NoError(t, err)
		require.Equal(t, sluicetype.CircuitClosed, c.State)
		require.False(t, c.Manual)
	})

	t.Run("CooldownCapped", func(t *testing.T) {
		for n, want := range map[int]time.Duration{1: 300 * time.Millisecond, 2: 600 * time.Millisecond, 3: time.Second, 40: time.Second} {
			require.Equal(t, want, policy.CooldownAfter(n), "opening %d", n)
		}
	})

	t.Run("OneProbeUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		short := driver.CircuitPolicy{Threshold: 1, Cooldown: time.Millisecond, MaxCooldown: time.Millisecond}
		_, err := b.d.RecordCircuit(b.ctx, driver.RecordCircuitParams{Type: "email", Failed: true, Policy: short})
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		const n = 12
		won := make(chan string, n)
		racetest.Run(t, n, func(int) error {
			tok := newToken()
			ok, err := b.d.ProbeCircuit(b.ctx, driver.ProbeCircuitParams{Type: "email", Token: tok, TTL: time.Minute})
			if ok {
				won <- tok
			}
			return err
		})
		close(won)
		require.Len(t, won, 1, "exactly one probe across concurrent callers")
		c, err := b.d.Circuit(b.ctx, driver.CircuitParams{Type: "email"})
		require.NoError(t, err)
		require.Equal(t, <-won, c.Probe)
	})

	t.Run("TokensExactUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A refill too slow to add a whole token during the test: the
		// takers together must get exactly the burst.
		const burst, rate = 40, 0.001
		var mu sync.Mutex
		total := 0
		racetest.Run(t, 8, func(int) error {
			for {
				n, err := b.d.TakeTokens(b.ctx, driver.TakeTokensParams{Name: "type:email", Rate: rate, Burst: burst, Want: 3})
				if err != nil {
					return err
				}
				if n > 3 {
					return fmt.Errorf("took %d tokens, wanted at most 3", n)
				}
				if n == 0 {
					return nil
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		})
		require.Equal(t, burst, total)

		require.NoError(t, b.d.ReturnTokens(b.ctx, driver.ReturnTokensParams{Name: "type:email", N: 5, Rate: rate, Burst: burst}))
		n, err := b.d.TakeTokens(b.ctx, driver.TakeTokensParams{Name: "type:email", Rate: rate, Burst: burst, Want: 10})
		require.NoError(t, err)
		require.Equal(t, 5, n, "returned tokens can be taken again")

		list, err := b.d.ListRateBuckets(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "type:email", list[0].Name)
		require.Less(t, list[0].Tokens, 1.0)
	})

	t.Run("TokensBoundUnderConcurrentRefill", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Takers racing on a refilling bucket get no more than the burst
		// plus the refill over the time they took for: a taker that
		// waited for the row lock must not credit a span twice.
		const rate, burst = 20.0, 5
		start := b.now()
		var mu sync.Mutex
		total := 0
		racetest.Run(t, 4, func(int) error {
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				n, err := b.d.TakeTokens(b.ctx, driver.TakeTokensParams{Name: "queue:api", Rate: rate, Burst: burst, Want: 10})
				if err != nil {
					return err
				}
				if n > 1 {
					if err := b.d.ReturnTokens(b.ctx, driver.ReturnTokensParams{Name: "queue:api", N: 1, Rate: rate, Burst: burst}); err != nil {
						return err
					}
					n--
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
			return nil
		})
		elapsed := b.now().Sub(start)
		require.LessOrEqual(t, float64(total), burst+rate*elapsed.Seconds(), "taken in %s", elapsed)
		require.Greater(t, total, burst, "the bucket refilled while they took")
	})

	t.Run("TokensRefill", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		take := func(want int) int {
			t.Helper()
			n, err := b.d.TakeTokens(b.ctx, driver.TakeTokensParams{Name: "queue:mail", Rate: 50, Burst: 10, Want: want})
			require.NoError(t, err)
			return n
		}
		start := b.now()
		require.Equal(t, 10, take(100), "a new bucket starts full, and gives no more than its burst")
		time.Sleep(100 * time.Millisecond)
		got := take(100)
		elapsed := b.now().Sub(start)
		require.GreaterOrEqual(t, got, 4, "about 5 tokens refill in 100ms at 50/s")
		require.LessOrEqual(t, float64(got), min(10, elapsed.Seconds()*50+1), "never more than the refill or the burst")
		time.Sleep(time.Second)
		require.Equal(t, 10, take(100), "a refill stops at the burst")
	})
}

// endCooldown moves the stored end of a circuit's cool-down a second into
// the database's past, as if it had been waited out.
func (b *bundle) endCooldown(typ string) {
	b.t.Helper()
	past := b.now().Add(-time.Second)
	var v any
	switch b.d.Name() {
	case "sqlite":
		v = past.UTC().Format(sqldriver.TextTimeLayout)
	case "mysql":
		v = past.UTC()
	case "postgres":
		v = past
	default:
		b.t.Fatalf("no stored time encoding for driver %s", b.d.Name())
	}
	table := strings.TrimSuffix(b.jobsTable(), "jobs") + "circuits"
	res, err := b.d.DB().ExecContext(b.ctx, "UPDATE "+table+" SET open_until = "+b.d.Dialect().Placeholder(1)+" WHERE type = "+b.d.Dialect().Placeholder(2), v, typ)
	require.NoError(b.t, err)
	n, err := res.RowsAffected()
	require.NoError(b.t, err)
	require.EqualValues(b.t, 1, n, "the circuit of %s", typ)
}
