package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCLICircuit opens and closes a type's circuit by hand and reads it back
// from `sluice circuit list` and `sluice stats`.
func TestCLICircuit(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}

	r := run(t, env, "", "circuit", "list")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "no circuit")

	r = run(t, env, "", "circuit", "open", "mailer")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, "circuit mailer: open\n", r.Stdout)
	c, err := d.Circuit(context.Background(), driver.CircuitParams{Type: "mailer"})
	require.NoError(t, err)
	require.Equal(t, sluicetype.CircuitOpen, c.State)
	require.True(t, c.Manual)

	r = run(t, env, "", "stats")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `mailer\s+open\s+0\s+1\s+closed by hand`, r.Stdout)
	r = run(t, env, "", "circuit", "list", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, `"type":"mailer","state":"open"`)

	r = run(t, env, "", "circuit", "close", "mailer")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, "circuit mailer: closed\n", r.Stdout)

	r = run(t, env, "", "circuit", "open", strings.Repeat("t", 65))
	require.Equal(t, 2, r.Code, "bad input")
	require.Contains(t, r.Stderr, "type")
}

// TestCLIRateBuckets reads the cluster-wide rate limits' buckets from
// `sluice stats`, in text and JSON.
func TestCLIRateBuckets(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}

	r := run(t, env, "", "stats")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.NotContains(t, r.Stdout, "RATE BUCKET", "no limit has taken a token yet")

	for _, name := range []string{driver.TypeBucket("mail"), driver.PartitionBucket("tenants", "acme")} {
		_, err := d.TakeTokens(context.Background(), driver.TakeTokensParams{Name: name, Rate: 1, Burst: 3, Want: 1})
		require.NoError(t, err)
	}
	r = run(t, env, "", "stats")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `RATE BUCKET\s+TOKENS AT LAST TAKE\s+LAST TAKE\npartition:tenants#acme\s+2\.0\s+\S+\ntype:mail\s+2\.0\s+\S+\n`, r.Stdout)
	r = run(t, env, "", "stats", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, `"rate_buckets":[{"name":"partition:tenants#acme","tokens":2,`)
}
