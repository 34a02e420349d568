package sluicetype_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluicetype"
)

// A job's JSON is what the HTTP API and the CLI print: the payload as the
// document it holds, the trace id rather than the traceparent, and each
// attempt's duration in milliseconds when its start is known.
func TestJobRowJSON(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	j := sluicetype.JobRow{ID: 7, Queue: "default", Type: "mail", Dedupe: sluicetype.DedupePermanent,
		Payload: []byte(`{"to":"a@example.com"}`), Status: sluicetype.StatusSuccess, CreatedAt: start,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		History: []sluicetype.Attempt{
			{Number: 1, Start: start, End: start.Add(1500 * time.Millisecond), Outcome: sluicetype.OutcomeRetry},
			{Number: 2, End: start.Add(time.Minute), Outcome: sluicetype.AttemptLeaseExpired},
		}}
	b, err := json.Marshal(j)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, map[string]any{"to": "a@example.com"}, m["payload"])
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", m["trace_id"])
	require.NotContains(t, m, "TraceParent")
	history := m["history"].([]any)
	require.Equal(t, 1500.0, history[0].(map[string]any)["duration_ms"])
	require.NotContains(t, history[1].(map[string]any), "duration_ms", "a vanished worker's attempt has no start")
	require.NotContains(t, history[1].(map[string]any), "start")

	var back sluicetype.JobRow
	require.NoError(t, json.Unmarshal(b, &back))
	require.JSONEq(t, `{"to":"a@example.com"}`, string(back.Payload))
	require.Equal(t, j.History[0].Duration(), back.History[0].Duration())
	require.Equal(t, j.Status, back.Status)
}

// A row written by hand may hold a payload that is no JSON; its JSON form
// is the text as a string, so that the document stays valid.
func TestJobRowJSONKeepsAnInvalidPayloadValid(t *testing.T) {
	b, err := json.Marshal(sluicetype.JobRow{ID: 1, Payload: []byte("not json")})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "not json", m["payload"])
	require.NotContains(t, m, "trace_id", "no traceparent, no trace id")
}

// A circuit shows until only while it means something: open by failures
// or half-open, not closed (which keeps the last deadline) nor opened by hand.
func TestCircuitJSONUntil(t *testing.T) {
	until := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		circuit sluicetype.Circuit
		shown   bool
	}{
		{sluicetype.Circuit{Type: "a", State: sluicetype.CircuitOpen, Until: until}, true},
		{sluicetype.Circuit{Type: "b", State: sluicetype.CircuitHalfOpen, Until: until}, true},
		{sluicetype.Circuit{Type: "c", State: sluicetype.CircuitClosed, Until: until}, false},
		{sluicetype.Circuit{Type: "d", State: sluicetype.CircuitOpen, Manual: true, Until: until}, false},
	} {
		b, err := json.Marshal(c.circuit)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		if c.shown {
			require.Equal(t, "2026-12-01T10:00:00Z", m["until"], c.circuit.Type)
		} else {
			require.NotContains(t, m, "until", c.circuit.Type)
		}
		require.NotContains(t, m, "Probe")
		require.Equal(t, c.circuit.State, m["state"])
	}
}
