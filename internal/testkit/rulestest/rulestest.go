// Package rulestest reads testdata/enqueue_rules.json: the job requests
// that every enqueue path (the HTTP API, the CLI, the Go client, and the
// PHP library, which reads the same file) must accept or refuse alike.
package rulestest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Case is one element of the file.
type Case struct {
	Name string `json:"name"`
	// Request is the body of POST /v1/jobs; RequestRawBase64 holds it
	// instead when it carries bytes a JSON file cannot (invalid UTF-8, a
	// lone surrogate, a repeated field).
	Request          json.RawMessage `json:"request"`
	RequestRawBase64 string          `json:"request_raw_base64"`
	OK               bool            `json:"ok"`
	// Field is what a refusal names, as its message starts: "payload.a".
	Field string `json:"field"`
	// Message, when set, is part of the refusal's message.
	Message string `json:"message"`
}

// Load reads every case.
func Load(t testing.TB) []Case {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "..", "testdata", "enqueue_rules.json"))
	require.NoError(t, err)
	var cs []Case
	require.NoError(t, json.Unmarshal(b, &cs))
	require.NotEmpty(t, cs)
	return cs
}

// Body is the request's bytes as a client sends them.
func (c Case) Body(t testing.TB) []byte {
	t.Helper()
	if c.RequestRawBase64 == "" {
		require.NotEmpty(t, c.Request, c.Name)
		return c.Request
	}
	b, err := base64.StdEncoding.DecodeString(c.RequestRawBase64)
	require.NoError(t, err, c.Name)
	return b
}

// RequireRefusal checks a refusal's message: from its start (or from
// after prefix, such as "--ndjson line 2: "), it names the field, and it
// contains Message.
func (c Case) RequireRefusal(t testing.TB, prefix, msg string) {
	t.Helper()
	at := 0
	if prefix != "" {
		at = strings.Index(msg, prefix)
		require.GreaterOrEqual(t, at, 0, "%s: %q has no %q", c.Name, msg, prefix)
		at += len(prefix)
	}
	require.True(t, strings.HasPrefix(msg[at:], c.Field+": "), "%s: %q does not name the field %q", c.Name, msg, c.Field)
	require.Contains(t, msg, c.Message, c.Name)
}
