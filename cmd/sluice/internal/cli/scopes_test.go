package cli_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// serve takes auth.tokens mixing a plain string, which works as admin
// and is warned of once by its key path (never its value), with scoped
// mappings: a read token may read and is refused an enqueue.
func TestServeScopedTokens(t *testing.T) {
	t.Parallel()
	const plain = "plain-token-Jd7Vn2Qs9Lx4Pf8Rk3"
	const reader = "read-token-Hq5Zt8Nc2Vb6Xy1Lp0"
	_, tg := testdb.OpenURL(t, "sqlite")
	cfg, _ := writeConfig(t, dbConfig(tg, `auth:
  tokens:
    - ${PLAIN_TOKEN}
    - { name: grafana, token: "${READ_TOKEN}", scope: read }
`))
	addr := testdb.FreeAddr(t)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix, "PLAIN_TOKEN=" + plain, "READ_TOKEN=" + reader}
	s := startWorker(t, env, "serve", "--config", cfg, "--listen", addr, "--no-workers")

	call := func(tok, method, path, body string) int {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	// A wait for the process to serve, not a judgement of its start:
	// testdb.WaitFor names what was awaited if it never comes.
	testdb.WaitFor(t, time.Minute, "serve answers the read token on /v1/stats", func() bool {
		return call(reader, "GET", "/v1/stats", "") == http.StatusOK
	})
	require.Equal(t, http.StatusForbidden, call(reader, "POST", "/v1/jobs", `{"type":"append"}`))
	require.Equal(t, http.StatusCreated, call(plain, "POST", "/v1/jobs", `{"type":"append"}`))
	require.NoError(t, s.Term(t, time.Minute))

	log := s.Stderr()
	require.Equal(t, 1, strings.Count(log, "an auth token without a scope can do everything"), log)
	require.Contains(t, log, "auth.tokens[0]")
	require.NotContains(t, log, plain)
	require.NotContains(t, log, reader)
}
