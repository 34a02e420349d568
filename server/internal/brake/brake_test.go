package brake

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clock"
)

func yes() bool { return true }
func no() bool  { return false }

// TestClientWaits: a client's first Free failures are answered; then each
// attempt waits, twice as long after each failure, up to Max; a refused
// attempt is not checked; a correct token forgets the failures.
func TestClientWaits(t *testing.T) {
	clk := clock.NewManual(time.Now())
	b := New(clk.Now)
	for i := range Free {
		ok, wait := b.Try("10.0.0.1", no)
		require.False(t, ok)
		require.Zero(t, wait, "failure %d is free", i)
	}
	checked := false
	_, wait := b.Try("10.0.0.1", func() bool { checked = true; return true })
	require.Equal(t, First, wait)
	require.False(t, checked, "a refused attempt is not checked")
	for _, want := range []time.Duration{2 * First, 4 * First, 8 * First, 16 * First, 32 * First, Max, Max} {
		clk.Advance(wait)
		_, w := b.Try("10.0.0.1", no)
		require.Zero(t, w)
		_, wait = b.Try("10.0.0.1", no)
		require.Equal(t, want, wait)
	}
	clk.Advance(wait)
	ok, _ := b.Try("10.0.0.1", yes)
	require.True(t, ok)
	_, wait = b.Try("10.0.0.1", no)
	require.Zero(t, wait, "a correct token forgets the failures")
}

// TestMapIsBounded: failures from more clients than the brake keeps never
// grow its map past maxClients.
func TestMapIsBounded(t *testing.T) {
	b := New(nil)
	for i := range 3 * maxClients {
		b.tokens = Burst // keep the shared bucket out of this
		_, wait := b.Try(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), no)
		require.Zero(t, wait)
	}
	require.LessOrEqual(t, len(b.clients), maxClients)
	for i := range 2 * maxClients {
		ok, _ := b.Try(fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255), yes)
		require.True(t, ok)
	}
	require.LessOrEqual(t, len(b.trusted), maxClients)
}

// TestManyAddressesAreBoundedOverall: an attacker with a fresh address for
// every guess, guessing as fast as it is let for ten minutes of the
// brake's clock, has no more guesses checked than Burst + Rate×seconds.
func TestManyAddressesAreBoundedOverall(t *testing.T) {
	clk := clock.NewManual(time.Now())
	b := New(clk.Now)
	checked, n := 0, 0
	const step, steps = 10 * time.Millisecond, 60000
	for range steps {
		for range 10 { // ten guesses per step, 1,000 a second
			n++
			b.Try(fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255), func() bool { checked++; return false })
		}
		clk.Advance(step)
	}
	elapsed := (step * steps).Seconds()
	t.Logf("%d guesses from %d addresses in %.0fs: %d checked", n, n, elapsed, checked)
	require.LessOrEqual(t, float64(checked), Burst+Rate*elapsed)
	require.GreaterOrEqual(t, float64(checked), Rate*elapsed, "the stated rate is what is let through")
}

// TestTrustedClientIsNotLockedOut: while an attack keeps the shared bucket
// empty, the operator's client that presented a correct token within
// TrustFor still gets in with it, and a client that never did does not;
// past TrustFor the operator's client is one like any other.
func TestTrustedClientIsNotLockedOut(t *testing.T) {
	clk := clock.NewManual(time.Now())
	b := New(clk.Now)
	ok, _ := b.Try("192.0.2.1", yes) // the operator, earlier
	require.True(t, ok)
	attack := func() {
		for i := range 200 {
			b.Try(fmt.Sprintf("10.0.%d.%d", i>>8, i&255), no)
		}
	}
	clk.Advance(TrustFor - time.Second)
	attack()
	_, wait := b.Try("198.51.100.7", yes)
	require.Positive(t, wait, "the bucket is empty: a client never seen waits, even with the right token")
	ok, wait = b.Try("192.0.2.1", yes)
	require.True(t, ok, "the operator's client gets in (wait %s)", wait)

	// A trusted client's own failures still brake it, and take nothing
	// from the bucket.
	clk.Advance(time.Minute)
	b.tokens = 1
	for range Free {
		_, wait = b.Try("192.0.2.1", no)
		require.Zero(t, wait)
	}
	require.Equal(t, 1.0, b.tokens)
	_, wait = b.Try("192.0.2.1", yes)
	require.Equal(t, First, wait)

	clk.Advance(TrustFor + time.Second)
	attack()
	_, wait = b.Try("192.0.2.1", yes)
	require.Positive(t, wait, "trust lapses after TrustFor without a correct token")
}
