package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

var bin string

// testToken is the API token of the servers these tests start: as strong
// as sluice requires of a real one (`sluice token new` prints such).
const testToken = "cli-test-token-Hq4Zr8Wm2Tx6Ky9B"

// TestMain builds the real binary once; every test runs it as a user would.
// TestMain runs this package's many real processes apart from the fault
// and HA suites (testdb.Exclusive), whose lease timings they would starve.
// Its tests run in parallel with each other (each on its own table prefix,
// directory and processes): most of their time is spent waiting on the
// processes they started. The one that sets environment variables
// (TestExampleConfigsAreValid) cannot, and runs first.
//
// Every sluice process they start caps its pool with pool_max_conns: four
// tests at a time, several processes each at the default pools (16 and a
// LISTEN connection on PostgreSQL), ran PostgreSQL out of connections
// ("too many clients already", at its default max_connections of 100).
// (.ci/run runs them one at a time: see there.)
func TestMain(m *testing.M) {
	for name, env := range map[string]string{"mysql": "SLUICE_TEST_MYSQL", "postgres": "SLUICE_TEST_POSTGRES"} {
		os.Setenv(env, withParam(testdb.URL(name, ""), testPoolCap))
	}
	testdb.MainExclusive(m, "cmd/sluice/internal/cli", &bin)
}

// testPoolCap is the pool of every sluice process of this package's tests
// on MySQL and PostgreSQL (see TestMain).
const testPoolCap = "pool_max_conns=4"

// withParam adds the URL parameter p to u (kept if u has it already).
func withParam(u, p string) string {
	switch {
	case strings.Contains(u, "?"+p) || strings.Contains(u, "&"+p):
		return u
	case strings.Contains(u, "?"):
		return u + "&" + p
	default:
		return u + "?" + p
	}
}

// run runs the binary with env additions and optional stdin.
func run(t *testing.T, env []string, stdin string, args ...string) proctest.Result {
	t.Helper()
	return runIn(t, "", env, stdin, args...)
}

// runIn is run in the working directory dir ("" for a fresh empty one).
func runIn(t *testing.T, dir string, env []string, stdin string, args ...string) proctest.Result {
	t.Helper()
	cmd := command(t, dir, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return proctest.RunCmd(t, cmd)
}

// command is the binary with args in the working directory dir ("" for a
// fresh empty one).
func command(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	cmd := proctest.Command(t, bin, env, args...)
	if dir != "" {
		cmd.Dir = dir
	}
	return cmd
}

func TestCLIJobLifecycle(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}

		r := run(t, env, "", "migrate")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, "already up to date")

		r = run(t, env, "", "enqueue", "order_sync", "--key", "order-1", "--payload", `{"order":1}`, "--priority", "3")
		require.Equal(t, 0, r.Code, r.Stderr)
		var res struct {
			ID        int64 `json:"id"`
			Duplicate bool  `json:"duplicate"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
		require.False(t, res.Duplicate)
		first := res.ID

		r = run(t, env, "", "enqueue", "order_sync", "--key", "order-1")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.JSONEq(t, fmt.Sprintf(`{"id":%d,"duplicate":true}`, first), r.Stdout)

		r = run(t, env, `{"from":"stdin"}`, "enqueue", "report", "--payload", "-", "--delay", "1h")
		require.Equal(t, 0, r.Code, r.Stderr)

		r = run(t, env, "", "jobs", "show", fmt.Sprint(first), "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		var job map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &job))
		require.Equal(t, "order-1", job["key"])
		require.Equal(t, float64(3), job["priority"])
		require.Equal(t, "pending", job["status"])

		r = run(t, env, "", "jobs", "list", "--json", "--type", "report")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Equal(t, 1, strings.Count(r.Stdout, "\n"))
		require.Contains(t, r.Stdout, `"from":"stdin"`)

		r = run(t, env, "", "jobs", "cancel", fmt.Sprint(first))
		require.Equal(t, 0, r.Code, r.Stderr)
		r = run(t, env, "", "jobs", "cancel", fmt.Sprint(first))
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, "not in a state")
		r = run(t, env, "", "jobs", "retry", fmt.Sprint(first))
		require.Equal(t, 0, r.Code, r.Stderr)
		r = run(t, env, "", "jobs", "show", "999999")
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, "not found")

		r = run(t, env, "", "stats", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, `"pending":2`)

		r = run(t, env, "", "jobs", "purge", "--status", "success", "--older-than", "7d")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Equal(t, "deleted 0 jobs\n", r.Stdout)

		// NDJSON: all lines or none.
		good := `{"type":"a","key":"n1"}` + "\n" + `{"type":"a","key":"n1"}` + "\n\n" + `{"type":"b","payload":{"x":1},"delay":"5m"}` + "\n"
		r = run(t, env, good, "enqueue", "--ndjson", "-")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.JSONEq(t, `{"inserted":2,"duplicates":1}`, r.Stdout)
		jobs, err := d.ListJobs(t.Context(), sluicetype.ListParams{})
		require.NoError(t, err)
		require.Len(t, jobs, 4)
	})
}

func TestCLIBadInput(t *testing.T) {
	t.Parallel()
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
		{"bad payload", []string{"enqueue", "t", "--payload", "{nope"}, "payload: not valid JSON"},
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
			require.Equal(t, 2, r.Code, "stderr: %s", r.Stderr)
			require.Contains(t, r.Stderr, c.want)
			require.Equal(t, 1, strings.Count(r.Stderr, "\n"), "one line: %q", r.Stderr)
		})
	}
	jobs, err := d.ListJobs(t.Context(), sluicetype.ListParams{})
	require.NoError(t, err)
	require.Empty(t, jobs, "bad input wrote nothing")
}

func TestCLISchemaAndServerErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fresh.db")
	r := run(t, nil, "", "--db", "sqlite:"+path, "enqueue", "t")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "run `sluice migrate` first")

	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "upgraded from 0")
	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "already up to date")

	// A schema newer than the binary is refused, not "downgraded".
	d, err := dburl.Open("sqlite:"+path, dburl.Options{})
	require.NoError(t, err)
	_, err = d.DB().Exec("UPDATE sluice_schema SET version = 99")
	require.NoError(t, err)
	d.Close()
	r = run(t, nil, "", "--db", "sqlite:"+path, "migrate")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "newer than this binary")
	r = run(t, nil, "", "--db", "sqlite:"+path, "stats")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "upgrade sluice")

	r = run(t, nil, "", "--db", "mysql://root@127.0.0.1:1/nothing", "stats")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "127.0.0.1:1")
	require.Equal(t, 1, strings.Count(r.Stderr, "\n"), r.Stderr)

	r = run(t, nil, "", "version")
	require.Equal(t, 0, r.Code)
	require.True(t, strings.HasPrefix(r.Stdout, "sluice "))
}
