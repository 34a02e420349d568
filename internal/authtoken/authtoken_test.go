package authtoken_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/authtoken"
)

func TestCheck(t *testing.T) {
	for _, tok := range []string{
		"",
		"t0k",
		"secret",
		"s3cret-token",
		strings.Repeat("f", 31),                 // hex: 124 bits
		"0123456789012345678901234567890123456", // 38 digits: 126 bits
		"V2hhdCBpcyB0aGlzPz8",                   // 19 base64 characters
		" " + authtoken.New(),                   // a Bearer header cannot carry it
	} {
		require.Error(t, authtoken.Check(tok), "%q", tok)
	}
	for _, tok := range []string{
		"0123456789abcdef0123456789abcdef", // openssl rand -hex 16
		"0123456789012345678901234567890123456789",
		"V2hhdCBpcyB0aGlzPz8x-_A", // 22 base64url characters
		authtoken.New(),
	} {
		require.NoError(t, authtoken.Check(tok), "%q", tok)
	}
}

func TestCheckErrorKeepsTheTokenOut(t *testing.T) {
	err := authtoken.Check("hunter2")
	require.ErrorContains(t, err, "sluice token new")
	require.NotContains(t, err.Error(), "hunter2")
}

func TestNew(t *testing.T) {
	a, b := authtoken.New(), authtoken.New()
	require.Len(t, a, 43)
	require.NotEqual(t, a, b)
	require.Regexp(t, `^[A-Za-z0-9_-]+$`, a)
}
