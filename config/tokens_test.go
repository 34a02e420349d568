package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/config"
)

const (
	tokA = "tokA-Jd7Vn2Qs9Lx4Pf8Rk3Wm"
	tokB = "tokB-Hq5Zt8Nc2Vb6Xy1Lp0Ds"
	tokC = "tokC-Mw4Rf7Gk9Tj3Qa6Ue2Yh"
)

// auth.tokens mixes today's plain strings, which keep working as admin,
// with mappings that name a token and give it a scope.
func TestTokensMixedList(t *testing.T) {
	t.Setenv("PARTNER_TOKEN", tokB)
	t.Setenv("GRAFANA_TOKEN", tokC)
	f, err := config.Parse("sluice.yaml", []byte(`
auth:
  tokens:
    - `+tokA+`
    - name: partner-orders
      token: ${PARTNER_TOKEN}
      scope: enqueue
      types: [order_sync]
      queues: [orders]
    - { name: grafana, token: "${GRAFANA_TOKEN}", scope: read }
`))
	require.NoError(t, err)
	require.Equal(t, []config.Token{
		{Token: tokA, Scope: "admin", Plain: true},
		{Name: "partner-orders", Token: tokB, Scope: "enqueue", Types: []string{"order_sync"}, Queues: []string{"orders"}},
		{Name: "grafana", Token: tokC, Scope: "read"},
	}, f.Auth.Tokens)
}

func TestTokensRejected(t *testing.T) {
	for _, tc := range []struct{ yaml, path, msg string }{
		{"auth:\n  tokens:\n    - { name: a, token: " + tokA + ", scope: read }\n    - { name: b, token: " + tokB + ", scope: opperate }",
			"auth.tokens[1].scope", `"opperate" is not one of read, enqueue, operate, admin`},
		{"auth: { tokens: [{ name: a, token: " + tokA + " }] }", "auth.tokens[0].scope", "required: one of read, enqueue, operate, admin"},
		{"auth: { tokens: [{ name: g, token: " + tokA + ", scope: read, types: [order_sync] }] }",
			"auth.tokens[0].types", "only an enqueue token can be limited to types (this one is scope read)"},
		{"auth: { tokens: [{ name: g, token: " + tokA + ", scope: admin, queues: [orders] }] }",
			"auth.tokens[0].queues", "only an enqueue token can be limited to queues"},
		{"auth: { tokens: [{ name: p, token: " + tokA + ", scope: enqueue, types: [''] }] }", "auth.tokens[0].types[0]", "empty name"},
		{"auth:\n  tokens:\n    - { name: ci, token: " + tokA + ", scope: read }\n    - { name: ci, token: " + tokB + ", scope: operate }",
			"auth.tokens[1].name", `"ci" is also the name of auth.tokens[0]; names must be unique`},
		{"auth: { tokens: [{ token: " + tokA + ", scope: read }] }", "auth.tokens[0].name", "required"},
		{"auth: { tokens: [{ name: w, token: t0k, scope: read }] }", "auth.tokens[0].token", "token too weak"},
		{"auth: { tokens: [{ name: w, token: '', scope: read }] }", "auth.tokens[0].token", "empty token"},
		{"auth: { tokens: [{ name: w, token: " + tokA + ", scope: read, role: x }] }", "auth.tokens[0].role", "unknown key"},
		{"auth: { tokens: [[" + tokA + "]] }", "auth.tokens[0]", "want a mapping"},
		{"auth:\n  tokens:\n    - " + tokA + "\n    - { name: r, token: " + tokA + ", scope: read }", "auth.tokens[1].token", "the same value as auth.tokens[0]"},
	} {
		requireRejected(t, tc.yaml, tc.path, tc.msg)
	}
}

// An unset variable under token: fails only the commands that serve, as
// for a plain token; one under name: or scope: fails at load.
func TestTokenValueResolvedWhereUsed(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("auth: { tokens: [{ name: g, token: '${SLUICE_TEST_UNSET}', scope: read }] }\n"))
	require.NoError(t, err)
	require.ErrorContains(t, f.Unresolved("auth"), "sluice.yaml: auth.tokens[0].token: environment variable SLUICE_TEST_UNSET is not set")
	requireRejected(t, "auth: { tokens: [{ name: g, token: "+tokA+", scope: '${SLUICE_TEST_UNSET}' }] }",
		"auth.tokens[0].scope", "SLUICE_TEST_UNSET is not set")
}
