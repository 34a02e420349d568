package sluice_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/rulestest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// requireInputError checks that err is an *InputError naming field and that
// nothing of the call was written.
func requireInputError(t *testing.T, err error, field, msgPart, name string) {
	t.Helper()
	var ie *sluice.InputError
	require.True(t, errors.As(err, &ie), "%s: want an *InputError, got %v", name, err)
	require.Equal(t, field, ie.Field, "%s: %v", name, err)
	require.Contains(t, ie.Error(), msgPart, name)
}

// TestEnqueueRulesGo drives testdata/enqueue_rules.json through the Go
// client as a Go program that receives JSON would: DecodeEnqueueRequest,
// Params, Enqueue; and every refused case as one element of EnqueueMany
// after a good one. Each refusal is an *InputError naming the field, and
// writes nothing, on every database.
func TestEnqueueRulesGo(t *testing.T) {
	cases := rulestest.Load(t)
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		ctx := t.Context()
		rows := func() int { return len(testdb.AllJobs(t, d, sluicetype.ListParams{})) }
		written := 0
		for _, tc := range cases {
			req, err := sluice.DecodeEnqueueRequest(tc.Body(t))
			var p sluice.EnqueueParams
			perr := err
			if err == nil {
				p, err = req.Params()
				perr = err
			}
			if err == nil {
				var res sluice.EnqueueResult
				res, err = c.Enqueue(ctx, p)
				if err == nil {
					require.False(t, res.Duplicate, tc.Name)
					written++
				}
			}
			if tc.OK {
				require.NoError(t, err, tc.Name)
			} else {
				requireInputError(t, err, tc.Field, tc.Message, tc.Name)
			}
			require.Equal(t, written, rows(), "%s: rows written", tc.Name)

			// A refusal of parameters that decoded, inside a batch after a
			// good job: all or nothing.
			if !tc.OK && perr == nil {
				_, err := c.EnqueueMany(ctx, []sluice.EnqueueParams{{Type: "good"}, p})
				requireInputError(t, err, tc.Field, tc.Message, tc.Name+" in a batch")
				require.Equal(t, written, rows(), "%s in a batch: rows written", tc.Name)
			}
		}
	})
}

// TestEnqueueRulesGoValues checks what only Go callers can send: payloads
// as Go values and times as time.Time.
func TestEnqueueRulesGoValues(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		ctx := t.Context()
		for _, tc := range []struct {
			name         string
			p            sluice.EnqueueParams
			field, inMsg string
		}{
			{"NUL in a Go payload string", sluice.EnqueueParams{Type: "t", Payload: map[string]any{"a": "x\x00y"}}, "payload.a", "NUL"},
			{"Go slice payload", sluice.EnqueueParams{Type: "t", Payload: []int{1, 2}}, "payload", "must be a JSON object"},
			{"Go string payload", sluice.EnqueueParams{Type: "t", Payload: `{"a":1}`}, "payload", "double-encoded"},
			{"raw payload too large", sluice.EnqueueParams{Type: "t", Payload: json.RawMessage(`{"a":"` + strings.Repeat("x", sluice.MaxPayloadBytes) + `"}`)}, "payload", "at most 1048576 allowed"},
			{"run_at just after the zero time", sluice.EnqueueParams{Type: "t", RunAt: time.Time{}.Add(time.Second)}, "run_at", "out of range"},
			{"run_at after year 9999", sluice.EnqueueParams{Type: "t", RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "run_at", "out of range"},
			{"NUL in a Go key", sluice.EnqueueParams{Type: "t", Key: "a\x00b"}, "key", "NUL"},
			{"invalid UTF-8 in a Go type", sluice.EnqueueParams{Type: "t\xff"}, "type", "UTF-8"},
			{"max_attempts above 32 bits", sluice.EnqueueParams{Type: "t", MaxAttempts: sluice.MaxMaxAttempts + 1}, "max_attempts", "out of range"},
			{"deadline after year 9999", sluice.EnqueueParams{Type: "t", Deadline: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "deadline", "out of range"},
			{"deadline within a delay", sluice.EnqueueParams{Type: "t", Delay: time.Hour, Deadline: time.Now().Add(time.Minute)}, "deadline", "not after the job is due"},
			{"deadline a second ago", sluice.EnqueueParams{Type: "t", Deadline: time.Now().Add(-time.Second)}, "deadline", "in the past"},
		} {
			_, err := c.Enqueue(ctx, tc.p)
			requireInputError(t, err, tc.field, tc.inMsg, tc.name)
		}
		require.Empty(t, testdb.AllJobs(t, d, sluicetype.ListParams{}), "refusals wrote nothing")

		// The largest payload is stored, and comes back as sent.
		body := `{"a":"` + strings.Repeat("é", (sluice.MaxPayloadBytes-len(`{"a":""}`))/2) + `"}`
		require.LessOrEqual(t, len(body), sluice.MaxPayloadBytes)
		res, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "t", Payload: json.RawMessage(body)})
		require.NoError(t, err)
		j, err := d.GetJob(ctx, res.ID)
		require.NoError(t, err)
		require.JSONEq(t, body, string(j.Payload))
	})
}

// TestSchedulePayloadRules: a schedule's payload follows the enqueue rules,
// checked when the client is built rather than at every slot.
func TestSchedulePayloadRules(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	for payload, want := range map[string]string{
		`[1,2]`:          "schedule tick: payload: must be a JSON object, got an array",
		`"{\"a\":1}"`:    "double-encoded",
		`{"a":"\u0000"}`: "schedule tick: payload.a:",
	} {
		_, err := sluice.NewClient(sluice.Config{Driver: d,
			Schedules: []sluice.Schedule{{Name: "tick", Spec: every(t, "@every 1s"), Type: "t", Payload: json.RawMessage(payload)}}})
		require.ErrorContains(t, err, want, payload)
	}
	_, err := sluice.NewClient(sluice.Config{Driver: d,
		Schedules: []sluice.Schedule{{Name: "tick", Spec: every(t, "@every 1s"), Type: "t", Payload: json.RawMessage(`{"a":1}`)}}})
	require.NoError(t, err)
}
