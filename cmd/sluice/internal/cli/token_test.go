package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/authtoken"
)

// TestTokenNew: `sluice token new` prints a fresh token that the config
// accepts, where a short one is refused at load naming its key.
func TestTokenNew(t *testing.T) {
	t.Parallel()
	a := run(t, nil, "", "token", "new")
	require.Equal(t, 0, a.Code, a.Stderr)
	b := run(t, nil, "", "token", "new")
	tok := strings.TrimSuffix(a.Stdout, "\n")
	require.NoError(t, authtoken.Check(tok))
	require.NotEqual(t, a.Stdout, b.Stdout)

	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "sluice.db")
	cfg := filepath.Join(dir, "sluice.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("auth: { tokens: [\"${SLUICE_TOKEN}\"] }\n"), 0o600))
	r := run(t, []string{"SLUICE_TOKEN=" + tok}, "", "--config", cfg, "--db", db, "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, []string{"SLUICE_TOKEN=t0k"}, "", "--config", cfg, "--db", db, "migrate")
	require.Equal(t, 2, r.Code, "a config error, as for any other key")
	require.Contains(t, r.Stderr, "auth.tokens[0]: token too weak")
	require.Contains(t, r.Stderr, "sluice token new")
	require.NotContains(t, r.Stderr, "t0k")
}
