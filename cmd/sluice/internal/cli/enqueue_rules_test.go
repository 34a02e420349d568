package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/rulestest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// enqueueFlags spells a request as `sluice enqueue TYPE --flag ...`, or
// says it cannot: argv carries no NUL, and has no unknown or repeated
// fields. A case given as raw bytes is left to --ndjson: encoding/json,
// which reads it here, would mend what it tests.
func enqueueFlags(tc rulestest.Case, body []byte) ([]string, bool) {
	if tc.RequestRawBase64 != "" || strings.Contains(string(body), `\u0000`) {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil, false
	}
	var typ string
	if json.Unmarshal(fields["type"], &typ) != nil || typ == "" {
		return nil, false
	}
	args := []string{"enqueue", typ}
	for name, raw := range fields {
		var s string
		text := string(raw)
		if json.Unmarshal(raw, &s) == nil {
			text = s
		}
		switch name {
		case "type":
		case "payload":
			args = append(args, "--payload", string(raw))
		case "priority", "max_attempts":
			if text != string(raw) { // a JSON string where a number belongs: a flag cannot say so
				return nil, false
			}
			args = append(args, "--"+strings.ReplaceAll(name, "_", "-"), text)
		case "key", "queue", "delay", "dedupe", "partition", "run_at", "deadline":
			if text == string(raw) { // not a JSON string: a flag cannot say so
				return nil, false
			}
			args = append(args, "--"+strings.ReplaceAll(name, "_", "-"), text)
		default:
			return nil, false
		}
	}
	return args, true
}

// TestEnqueueRulesCLI drives testdata/enqueue_rules.json through the built
// binary: every case as a line of `enqueue --ndjson -` (alone, and after a
// good line), and every case that flags can spell as `enqueue TYPE
// --flags`. A refusal exits 2 with a message naming the field (or its
// flag) and writes nothing, on every database.
func TestEnqueueRulesCLI(t *testing.T) {
	t.Parallel()
	cases := rulestest.Load(t)
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
		rows := func() int { return len(testdb.AllJobs(t, d, sluicetype.ListParams{})) }
		written := 0
		for _, tc := range cases {
			body := tc.Body(t)
			r := run(t, env, string(body)+"\n", "enqueue", "--ndjson", "-")
			if tc.OK {
				require.Equal(t, 0, r.Code, "%s: %s", tc.Name, r.Stderr)
				require.JSONEq(t, `{"inserted":1,"duplicates":0}`, r.Stdout, tc.Name)
				written++
			} else {
				require.Equal(t, 2, r.Code, "%s: %s", tc.Name, r.Stderr)
				tc.RequireRefusal(t, "--ndjson line 1: ", r.Stderr)
				require.Contains(t, r.Stderr, "nothing was enqueued", tc.Name)

				r = run(t, env, `{"type":"good"}`+"\n"+string(body)+"\n", "enqueue", "--ndjson", "-")
				require.Equal(t, 2, r.Code, "%s after a good line: %s", tc.Name, r.Stderr)
				tc.RequireRefusal(t, "--ndjson line 2: ", r.Stderr)
			}
			require.Equal(t, written, rows(), "%s: rows written", tc.Name)

			args, ok := enqueueFlags(tc, body)
			if !ok {
				continue
			}
			r = run(t, env, "", args...)
			if tc.OK {
				require.Equal(t, 0, r.Code, "%s as flags %q: %s", tc.Name, args, r.Stderr)
				// A keyed request's key was taken by its --ndjson run.
				var res struct{ Duplicate bool }
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
				require.Equal(t, slices.Contains(args, "--key"), res.Duplicate, "%s as flags: %s", tc.Name, r.Stdout)
				if !res.Duplicate {
					written++
				}
			} else {
				require.Equal(t, 2, r.Code, "%s as flags %q: %s", tc.Name, args, r.Stderr)
				flag := `"--` + strings.ReplaceAll(tc.Field, "_", "-") + `"`
				if !strings.Contains(r.Stderr, flag) { // the flag parser's own message names the flag
					tc.RequireRefusal(t, "sluice: ", r.Stderr)
				}
			}
			require.Equal(t, written, rows(), "%s as flags: rows written", tc.Name)
		}
	})
}

// TestEnqueueCLIBytes: --payload @FILE and - have the API's and the Go
// client's limit, MaxPayloadBytes, and are not read whole when larger; a
// flag's raw bytes meet the rules the JSON cases test.
func TestEnqueueCLIBytes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
		dir := t.TempDir()
		write := func(file string, size int) string {
			p := filepath.Join(dir, file)
			require.NoError(t, os.WriteFile(p, []byte(`{"a":"`+strings.Repeat("x", size-len(`{"a":""}`))+`"}`), 0o644))
			return p
		}
		big := write("big.json", 10<<20)
		r := run(t, env, "", "enqueue", "t", "--payload", "@"+big)
		require.Equal(t, 2, r.Code, r.Stderr)
		require.Contains(t, r.Stderr, "sluice: payload: more than 1048576 bytes")
		b, err := os.ReadFile(big)
		require.NoError(t, err)
		r = run(t, env, string(b), "enqueue", "t", "--payload", "-")
		require.Equal(t, 2, r.Code, r.Stderr)
		require.Contains(t, r.Stderr, "sluice: payload: more than 1048576 bytes")
		require.Empty(t, testdb.AllJobs(t, d, sluicetype.ListParams{}), "refusals wrote nothing")

		r = run(t, env, "", "enqueue", "t", "--payload", "@"+write("max.json", sluice.MaxPayloadBytes))
		require.Equal(t, 0, r.Code, r.Stderr)
		r = run(t, env, "", "enqueue", "t", "--payload", "@"+write("over.json", sluice.MaxPayloadBytes+1))
		require.Equal(t, 2, r.Code, r.Stderr)
		require.Contains(t, r.Stderr, "payload:")
		require.Len(t, testdb.AllJobs(t, d, sluicetype.ListParams{}), 1)

		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"enqueue", "t", "--key", "a\xffb"}, "sluice: key: not valid UTF-8"},
			{[]string{"enqueue", "t\xff"}, "sluice: type: not valid UTF-8"},
			{[]string{"enqueue", "t", "--payload", "{\"a\":\"\xff\"}"}, "sluice: payload.a: not valid JSON text"},
		} {
			r := run(t, env, "", c.args...)
			require.Equal(t, 2, r.Code, "%q: %s", c.args, r.Stderr)
			require.Contains(t, r.Stderr, c.want, c.args)
		}
		require.Len(t, testdb.AllJobs(t, d, sluicetype.ListParams{}), 1, "refusals wrote nothing")

		r = run(t, env, "", "enqueue", "t", "--max-attempts", "0", "--payload", "null")
		require.Equal(t, 0, r.Code, r.Stderr)
		var res struct{ ID int64 }
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
		j, err := d.GetJob(t.Context(), res.ID)
		require.NoError(t, err)
		require.Equal(t, sluice.DefaultMaxAttempts, j.MaxAttempts, "--max-attempts 0 is the default")
		require.JSONEq(t, "{}", string(j.Payload), "--payload null is {}")
	})
}
