package sluicetype_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluicetype"
)

func TestLatencySlots(t *testing.T) {
	for _, c := range []struct {
		wait time.Duration
		slot int
	}{
		{-time.Second, 0}, {0, 0}, {999 * time.Microsecond, 0},
		{time.Millisecond, 1}, {1999 * time.Microsecond, 1}, {2 * time.Millisecond, 2},
		{3 * time.Second, 12}, {100 * time.Second, 17},
		{(1 << 23) * time.Millisecond, sluicetype.LatencySlots - 1}, {1000 * time.Hour, sluicetype.LatencySlots - 1},
	} {
		require.Equal(t, c.slot, sluicetype.LatencySlot(c.wait), "%s", c.wait)
		lo, hi := sluicetype.LatencyBounds(c.slot)
		if c.wait >= 0 {
			require.GreaterOrEqual(t, c.wait, lo, "%s", c.wait)
		}
		if hi != 0 {
			require.Less(t, c.wait, hi, "%s", c.wait)
		}
	}
	// The slots tile the line: each starts where the one before ends.
	for i := 1; i < sluicetype.LatencySlots; i++ {
		_, prevHi := sluicetype.LatencyBounds(i - 1)
		lo, _ := sluicetype.LatencyBounds(i)
		require.Equal(t, prevHi, lo, "slot %d", i)
	}
}

func TestLatencyQuantile(t *testing.T) {
	var h sluicetype.Latency
	_, ok := h.Quantile(0.5)
	require.False(t, ok, "an empty histogram has no quantile")

	h[sluicetype.LatencySlot(3*time.Millisecond)] = 4 // [2, 4) ms
	p, ok := h.Quantile(0.5)
	require.True(t, ok)
	require.Equal(t, 3*time.Millisecond, p, "half-way through the one slot")
	p, _ = h.Quantile(1)
	require.Equal(t, 4*time.Millisecond, p, "the top of the slot")

	// A wait in the open last slot: only its lower bound is known.
	h[sluicetype.LatencySlots-1] = 100
	p, _ = h.Quantile(0.95)
	lo, _ := sluicetype.LatencyBounds(sluicetype.LatencySlots - 1)
	require.Equal(t, lo, p)
}
