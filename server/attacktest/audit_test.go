package attacktest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuditTrailOverHTTP: an admin token pauses a queue while its client
// claims another address in X-Forwarded-For and X-Real-IP; the server
// trusts no proxy, so the audit entry names the token and the real
// address. A read token and a partner's enqueue token neither change
// anything nor read the trail, and no token's value is in it. On main
// there was no trail.
func TestAuditTrailOverHTTP(t *testing.T) {
	base := serve(t, scopedAuth)
	forged := map[string]string{"X-Forwarded-For": "203.0.113.66", "X-Real-IP": "203.0.113.66", "Forwarded": "for=203.0.113.66"}
	code, body := call(t, "POST", base+"/v1/queues/default/pause", adminToken, "", forged)
	require.Equal(t, http.StatusOK, code, body)

	for _, tok := range []string{readToken, partnerToken} {
		code, body := call(t, "POST", base+"/v1/queues/default/resume", tok, "", nil)
		require.Equal(t, http.StatusForbidden, code, body)
		code, body = call(t, "GET", base+"/v1/audit", tok, "", nil)
		require.Equal(t, http.StatusForbidden, code, body)
	}

	code, body = call(t, "GET", base+"/v1/audit", adminToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	var out struct {
		Entries []struct{ Actor, Source, Address, Action, Target string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	require.Len(t, out.Entries, 1, body)
	e := out.Entries[0]
	require.Equal(t, "ops", e.Actor)
	require.Equal(t, "api", e.Source)
	require.Equal(t, "127.0.0.1", e.Address, "a client's own forwarding headers are not believed")
	require.Equal(t, "queue.pause", e.Action)
	require.Equal(t, "queue default", e.Target)
	for _, tok := range []string{adminToken, readToken, partnerToken} {
		require.NotContains(t, body, tok)
	}
}
