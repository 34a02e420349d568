package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

var bin string

// TestMain builds the real binary once; every test runs it as a user would.
// TestMain runs this package's many real processes apart from the fault
// and HA suites (testdb.Exclusive), whose lease timings they would starve.
func TestMain(m *testing.M) {
	testdb.Exclusive("cmd/sluice/internal/cli")
	testdb.MainWithBinary(m, &bin)
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary with env additions and optional stdin.
func run(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	return runIn(t, "", env, stdin, args...)
}

// runIn is run in the working directory dir ("" for a fresh empty one).
func runIn(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = workDir(t, dir)
	cmd.Env = childEnv(env)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, so.String(), se.String()}
}

// workDir is dir, or a fresh empty directory, so that a command that
// falls back to ./sluice.yaml or ./sluice.db never touches the source tree.
func workDir(t *testing.T, dir string) string {
	if dir == "" {
		return t.TempDir()
	}
	return dir
}

// childEnv is the test's environment without the settings that choose a
// database or a config file, so that only env (and the arguments) do.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "SLUICE_DB" && k != "SLUICE_LISTEN_DB" && k != "SLUICE_CONFIG" && k != "SLUICE_PREFIX" {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

func TestCLIJobLifecycle(t *testing.T) {
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, tg := testdb.OpenURL(t, name)
			env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}

			r := run(t, env, "", "migrate")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "already up to date")

			r = run(t, env, "", "enqueue", "order_sync", "--key", "order-1", "--payload", `{"order":1}`, "--priority", "3")
			require.Equal(t, 0, r.code, r.stderr)
			var res struct {
				ID        int64 `json:"id"`
				Duplicate bool  `json:"duplicate"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
			require.False(t, res.Duplicate)
			first := res.ID

			r = run(t, env, "", "enqueue", "order_sync", "--key", "order-1")
			require.Equal(t, 0, r.code, r.stderr)
			require.JSONEq(t, fmt.Sprintf(`{"id":%d,"duplicate":true}`, first), r.stdout)

			r = run(t, env, `{"from":"stdin"}`, "enqueue", "report", "--payload", "-", "--delay", "1h")
			require.Equal(t, 0, r.code, r.stderr)

			r = run(t, env, "", "jobs", "show", fmt.Sprint(first), "--json")
			require.Equal(t, 0, r.code, r.stderr)
			var job map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &job))
			require.Equal(t, "order-1", job["key"])
			require.Equal(t, float64(3), job["priority"])
			require.Equal(t, "pending", job["status"])

			r = run(t, env, "", "jobs", "list", "--json", "--type", "report")
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, 1, strings.Count(r.stdout, "\n"))
			require.Contains(t, r.stdout, `"from":"stdin"`)

			r = run(t, env, "", "jobs", "cancel", fmt.Sprint(first))
			require.Equal(t, 0, r.code, r.stderr)
			r = run(t, env, "", "jobs", "cancel", fmt.Sprint(first))
			require.Equal(t, 1, r.code)
			require.Contains(t, r.stderr, "not in a state")
			r = run(t, env, "", "jobs", "retry", fmt.Sprint(first))
			require.Equal(t, 0, r.code, r.stderr)
			r = run(t, env, "", "jobs", "show", "999999")
			require.Equal(t, 1, r.code)
			require.Contains(t, r.stderr, "not found")

			r = run(t, env, "", "stats", "--json")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, `"pending":2`)

			r = run(t, env, "", "jobs", "purge", "--status", "success", "--older-than", "7d")
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, "deleted 0 jobs\n", r.stdout)

			// NDJSON: all lines or none.
			good := `{"type":"a","key":"n1"}` + "\n" + `{"type":"a","key":"n1"}` + "\n\n" + `{"type":"b","payload":{"x":1},"delay":"5m"}` + "\n"
			r = run(t, env, good, "enqueue", "--ndjson", "-")
			require.Equal(t, 0, r.code, r.stderr)
			require.JSONEq(t, `{"inserted":2,"duplicates":1}`, r.stdout)
			jobs, err := d.ListJobs(t.Context(), driver.ListParams{})
			require.NoError(t, err)
			require.Len(t, jobs, 4)
		})
	}
}

func TestCLIBadInput(t *testing.T) {
	d, tg := testdb.OpenURL(t, "sqlite")
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
	ndjsonFile := filepath.Join(t.TempDir(), "jobs.ndjson")
	require.NoError(t, os.WriteFile(ndjsonFile, []byte(`{"type":"ok"}`+"\n"+`{"type":"ok","key":"x"}`+"\n"+`{"type":"ok","payload":{oops}`+"\n"), 0o644))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad scheme", []string{"--db", "oracle://x", "enqueue", "t"}, `unknown database URL scheme "oracle"`},
		{"bad payload", []string{"enqueue", "t", "--payload", "{nope"}, "--payload: not valid JSON"},
		{"payload file missing", []string{"enqueue", "t", "--payload", "@/nonexistent.json"}, "--payload"},
		{"long key", []string{"enqueue", "t", "--key", strings.Repeat("k", 192)}, "key: 192 characters, at most 191"},
		{"long type", []string{"enqueue", strings.Repeat("t", 65)}, "type: 65 characters, at most 64"},
		{"empty type", []string{"enqueue", ""}, "type: must not be empty"},
		{"bad delay", []string{"enqueue", "t", "--delay", "soon"}, "delay"},
		{"bad run-at", []string{"enqueue", "t", "--run-at", "tomorrow"}, "run_at"},
		{"bad dedupe", []string{"enqueue", "t", "--dedupe", "sometimes"}, "dedupe"},
		{"bad ndjson line", []string{"enqueue", "--ndjson", ndjsonFile}, "line 3"},
		{"ndjson unknown field", []string{"enqueue", "--ndjson", "-"}, "line 1"},
		{"no type", []string{"enqueue"}, "exactly one TYPE"},
		{"unknown flag", []string{"enqueue", "t", "--colour", "red"}, "unknown flag"},
		{"bad id", []string{"jobs", "show", "abc"}, `job id "abc"`},
		{"bad purge status", []string{"jobs", "purge", "--status", "pending", "--older-than", "1d"}, "--status"},
		{"bad log level", []string{"--log-level", "loud", "stats"}, "--log-level"},
		{"listen-db without db", []string{"--listen-db", "postgres://h/db", "stats"}, "--listen-db is set but the database comes from SLUICE_DB"},
		{"listen-db on sqlite", []string{"--db", tg.URL, "--listen-db", "postgres://h/db", "stats"}, "a listen URL is for a postgres:// database"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdin := ""
			if c.name == "ndjson unknown field" {
				stdin = `{"type":"ok","colour":"red"}` + "\n"
			}
			r := run(t, env, stdin, c.args...)
			require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, c.want)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
		})
	}
	jobs, err := d.ListJobs(t.Context(), driver.ListParams{})
	require.NoError(t, err)
	require.Empty(t, jobs, "bad input wrote nothing")
}

func TestCLISchemaAndServerErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	r := run(t, nil, "", "--db", "sqlite:"+path, "enqueue", "t")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "run `sluice migrate` first")

	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "upgraded from 0")
	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "already up to date")

	// A schema newer than the binary is refused, not "downgraded".
	d, err := dburl.Open("sqlite:"+path, dburl.Options{})
	require.NoError(t, err)
	_, err = d.DB().Exec("UPDATE sluice_schema SET version = 99")
	require.NoError(t, err)
	d.Close()
	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "newer than this binary")
	r = run(t, nil, "", "--db", "sqlite:"+path, "stats")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "upgrade sluice")

	r = run(t, nil, "", "--db", "mysql://root@127.0.0.1:1/nothing", "stats")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "127.0.0.1:1")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)

	r = run(t, nil, "", "version")
	require.Equal(t, 0, r.code)
	require.True(t, strings.HasPrefix(r.stdout, "sluice "))
}
