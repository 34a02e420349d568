package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBrakeMapIsBounded: failures from more addresses than the brake
// keeps never grow its map past brakeAddrs, and the overall bucket refuses
// once it is dry.
func TestBrakeMapIsBounded(t *testing.T) {
	b := newLoginBrake()
	refused := 0
	for i := range 3 * brakeAddrs {
		b.tokens = brakeBurst // keep the overall bucket out of this part
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if b.admit(addr) > 0 {
			refused++
			continue
		}
		b.done(addr, false)
	}
	require.Zero(t, refused)
	require.LessOrEqual(t, len(b.addrs), brakeAddrs)

	b = newLoginBrake()
	for i := range int(brakeBurst) {
		addr := fmt.Sprintf("10.0.0.%d", i)
		require.Zero(t, b.admit(addr), "attempt %d", i)
		b.done(addr, false)
	}
	wait := b.admit("10.9.9.9")
	require.Positive(t, wait, "the overall bucket is dry")
	require.LessOrEqual(t, wait, time.Second)
	// A success gives its token back: the operator logging in does not
	// drain the bucket.
	b.tokens = 1
	require.Zero(t, b.admit("10.8.8.8"))
	b.done("10.8.8.8", true)
	require.GreaterOrEqual(t, b.tokens, 1.0)
}
