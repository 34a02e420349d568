package attemptlog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTailBufferKeepsTheLastBytes(t *testing.T) {
	b := NewTail(8)
	for _, s := range []string{"abc", "defgh", "ij"} {
		b.Write([]byte(s))
	}
	require.Equal(t, "cdefghij", b.String())

	b = NewTail(8)
	b.Write([]byte("ab"))
	b.Write([]byte(strings.Repeat("x", 20) + "12345678"))
	require.Equal(t, "12345678", b.String(), "one write longer than the buffer")

	b = NewTail(8)
	b.Write([]byte("12345678"))
	require.Equal(t, "12345678", b.String(), "an exact fit is not truncated")
}

func TestTailBufferDropsASplitRune(t *testing.T) {
	b := NewTail(4)
	b.Write([]byte("aé€")) // 1 + 2 + 3 bytes: the last 4 start inside é
	require.Equal(t, "€", b.String())
}
