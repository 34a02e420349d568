package cli_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// typoConfig has a "mail" queue and one type, greet, in the default queue.
func typoConfig(t *testing.T, url, extra string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`db: `+url+`
queues:
  default: { concurrency: 2 }
  mail: { concurrency: 1 }
types:
  greet:
    command: ["true"]
`+extra), 0o644))
	return cfg
}

// httpDo sends a request and returns the status, the Allow header and the body.
func httpDo(t *testing.T, method, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Allow"), string(b)
}

// Issue 24 item 8: a typo in a queue name or a parameter is refused with
// a message that names it, from the CLI and from the API, and writes
// nothing; a queue only the database knows (it has jobs) is accepted.
func TestTyposRefused(t *testing.T) {
	t.Parallel()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg := typoConfig(t, tg.URL, "")
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}

			r := run(t, env, "", "--config", cfg, "queues", "pause", "nosuchqueue")
			require.Equal(t, 2, r.Code, r.Stdout+r.Stderr)
			require.Contains(t, r.Stderr, `queue: unknown queue "nosuchqueue": not in the config (known: default, mail)`)
			require.Empty(t, r.Stdout)
			r = run(t, env, "", "--config", cfg, "run", "--queue", "nosuchqueue")
			require.Equal(t, 2, r.Code, r.Stdout+r.Stderr)
			require.Contains(t, r.Stderr, `unknown queue "nosuchqueue"`)
			flags, err := d.PausedQueues(context.Background())
			require.NoError(t, err)
			require.NotContains(t, flags, "nosuchqueue", "a refused pause writes nothing")

			r = run(t, env, "", "--config", cfg, "queues", "pause", "mail")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.Equal(t, "queue mail: paused\n", r.Stdout)
			// A queue that only the database knows: a job was enqueued there.
			r = run(t, env, "", "--config", cfg, "enqueue", "greet", "--queue", "sqlonly")
			require.Equal(t, 0, r.Code, r.Stderr)
			r = run(t, env, "", "--config", cfg, "queues", "pause", "sqlonly")
			require.Equal(t, 0, r.Code, r.Stderr)

			addr := testdb.FreeAddr(t)
			startWorker(t, env, "--config", cfg, "serve", "--no-workers", "--listen", addr)
			base := "http://" + addr
			require.Eventually(t, func() bool { return proctest.Healthy(base) }, time.Minute, 50*time.Millisecond)
			for _, tc := range []struct{ method, path, want string }{
				{"POST", "/v1/run?queue=nosuch", `unknown queue \"nosuch\"`},
				{"POST", "/v1/run?maxjobs=5&queue=default", "unknown query parameter maxjobs (known: queue, type, max_jobs, max_seconds)"},
				{"POST", "/v1/run?type=nosuch", `no handler for type \"nosuch\"`},
				{"POST", "/v1/queues/nosuch/pause", `unknown queue \"nosuch\"`},
				{"POST", "/v1/queues/mail/resume?force=1", "unknown query parameter force (known: none)"},
			} {
				code, _, body := httpDo(t, tc.method, base+tc.path)
				require.Equal(t, http.StatusBadRequest, code, "%s %s: %s", tc.method, tc.path, body)
				require.Contains(t, body, tc.want, "%s %s", tc.method, tc.path)
			}
			code, allow, body := httpDo(t, "GET", base+"/v1/run")
			require.Equal(t, http.StatusMethodNotAllowed, code)
			require.Equal(t, "POST", allow)
			require.JSONEq(t, `{"error":"method not allowed; allowed: POST"}`, body)
			code, _, body = httpDo(t, "POST", base+"/v1/queues/sqlonly/resume")
			require.Equal(t, http.StatusOK, code, body)
		})
	}
}

// Issue 24 item 9: a pass or a worker claims only the types it has a
// handler for, so a job of a type no handler serves is never claimed nor
// charged: it waits, shown by `sluice stats` (and --json), GET /v1/stats
// and sluice_jobs_waiting_for_handler. Its enqueue is warned about, and a
// worker with no types says so.
func TestJobsWithoutHandler(t *testing.T) {
	t.Parallel()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg := typoConfig(t, tg.URL, "")
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			r := run(t, env, "", "--config", cfg, "enqueue", "send_email")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.Contains(t, r.Stderr, "enqueued a job of a type the config does not declare")
			require.Contains(t, r.Stderr, "type=send_email")
			r = run(t, env, "", "--config", cfg, "enqueue", "greet")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.NotContains(t, r.Stderr, "does not declare")

			r = run(t, env, "", "--config", cfg, "run", "--max-seconds", "5")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.JSONEq(t, `{"ok":true,"done":1,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
			require.Contains(t, r.Stderr, "job finished", "a success is logged at the default level")
			j := onlyJob(t, d, "send_email")
			require.Equal(t, sluicetype.StatusPending, j.Status)
			require.Equal(t, 0, j.Attempts, "never claimed, no attempt burnt")
			require.Empty(t, j.LastError)

			r = run(t, env, "", "--config", cfg, "stats")
			require.Equal(t, 0, r.Code, r.Stderr)
			// send_email alone: the pass served greet.
			require.Regexp(t, `(?s)\nWAITING FOR A HANDLER +PENDING\nsend_email +1\n(\n.*)?\z`, r.Stdout)
			r = run(t, env, "", "--config", cfg, "stats", "--json")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.Contains(t, r.Stdout, `"waiting_for_handler":[{"type":"send_email","pending":1}]`)

			addr := testdb.FreeAddr(t)
			startWorker(t, env, "--config", cfg, "serve", "--no-workers", "--listen", addr)
			base := "http://" + addr
			require.Eventually(t, func() bool { return proctest.Healthy(base) }, time.Minute, 50*time.Millisecond)
			code, _, body := httpDo(t, "POST", base+"/v1/run?max_seconds=5")
			require.Equal(t, http.StatusOK, code, body)
			require.JSONEq(t, `{"ok":true,"done":0,"retried":0,"failed":0,"requeued":0}`, body)
			code, _, body = httpDo(t, "GET", base+"/v1/stats")
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, `"waiting_for_handler":[{"type":"send_email","pending":1}]`)
			code, _, body = httpDo(t, "GET", base+"/metrics")
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, body, `sluice_jobs_waiting_for_handler{type="send_email"} 1`)
			require.NotContains(t, body, `sluice_jobs_waiting_for_handler{type="greet"}`)

			empty := filepath.Join(t.TempDir(), "sluice.yaml")
			require.NoError(t, os.WriteFile(empty, []byte("db: "+tg.URL+"\n"), 0o644))
			w := startWorker(t, env, "--config", empty, "work")
			require.Eventually(t, func() bool { return strings.Contains(w.Stderr(), "the config declares no job types") },
				15*time.Second, 50*time.Millisecond)
			require.NoError(t, w.Term(t, 15*time.Second))
		})
	}
}

// Issue 24 item 11: read-only and admin commands run without the server's
// token or the handlers' secrets; the commands that use them name the
// unset variable.
func TestSecretsOnlyWhereUsed(t *testing.T) {
	t.Parallel()
	_, tg := testdb.OpenURL(t, "sqlite")
	cfg := typoConfig(t, tg.URL, `  hook:
    http: { url: "http://127.0.0.1:9/hook", secret: "${SLUICE_TEST_HOOK_SECRET}" }
auth: { tokens: ["${SLUICE_TEST_TOKEN}"] }
`)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := run(t, env, "", "--config", cfg, "enqueue", "hook")
	require.Equal(t, 0, r.Code, r.Stderr)
	for _, args := range [][]string{{"jobs", "show", "1"}, {"jobs", "list"}, {"stats"}, {"queues", "pause", "mail"}} {
		r = run(t, env, "", append([]string{"--config", cfg}, args...)...)
		require.Equal(t, 0, r.Code, "%v: %s", args, r.Stderr)
	}
	r = run(t, env, "", "--config", cfg, "run")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "types.hook.http.secret: environment variable SLUICE_TEST_HOOK_SECRET is not set")
	r = run(t, env, "", "--config", cfg, "serve", "--listen", testdb.FreeAddr(t))
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "auth.tokens[0]: environment variable SLUICE_TEST_TOKEN is not set")
}

// The first hour's rough edges: each message says what is wrong and the
// exit code is 2 for a usage error.
func TestFirstHourMessages(t *testing.T) {
	t.Parallel()
	_, tg := testdb.OpenURL(t, "sqlite")
	cfg := typoConfig(t, tg.URL, "")
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}

	r := run(t, env, "", "--config", cfg, "enqueue", "greet", "--priority", "abc")
	require.Equal(t, 2, r.Code)
	require.Equal(t, "sluice: invalid argument \"abc\" for \"--priority\" flag: want an integer\n", r.Stderr)

	r = run(t, env, "", "--config", cfg, "serve", "--listen", "127.0.0.1:99999")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, `invalid port "99999"`)

	tab := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(tab, []byte("types:\n  greet:\n\tcommand: [\"true\"]\n"), 0o644))
	r = run(t, env, "", "--config", tab, "stats")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "tabs are not allowed for indentation in YAML; indent with spaces (line 3)")

	r = run(t, nil, "", "lock", "x", "--backend", "redis://127.0.0.1:6379", "--", "true")
	require.NotEqual(t, 0, r.Code)
	require.Contains(t, r.Stderr, "no database number: want redis://HOST:PORT/DB, such as redis://127.0.0.1:6379/0")

	// A port that accepts and closes at once, as a non-MySQL service might.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	r = run(t, nil, "", "--db", "mysql://root@"+ln.Addr().String()+"/x", "stats")
	require.Equal(t, 1, r.Code, r.Stderr)
	require.NotContains(t, r.Stderr, "[mysql]")
	require.NotContains(t, r.Stderr, "packets.go")
	require.Contains(t, r.Stderr, "invalid connection (the server closed the connection during the MySQL handshake")
}

// A job's text (here the stderr of a command that failed, which a remote
// receiver's answer or an API client's key reaches the same way) shows in
// `sluice jobs list` with its control characters spelled out: it cannot
// retitle the operator's terminal, clear it or overwrite a line.
func TestJobTablesEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg := typoConfig(t, tg.URL, `  hostile:
    command: ["sh", "-c", "printf '\\033]0;pwned\\007\\033[2J\\302\\233boom\\rdone' >&2; exit 1"]
    max_attempts: 1
`)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := run(t, env, "", "--config", cfg, "enqueue", "hostile")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "--config", cfg, "run", "--max-seconds", "10")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, onlyJob(t, d, "hostile").LastError, "\x1b]0;pwned\x07", "the error is stored as the command wrote it")

	r = run(t, env, "", "--config", cfg, "jobs", "list")
	require.Equal(t, 0, r.Code, r.Stderr)
	for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		require.NotContains(t, r.Stdout, c, "a control character reached the terminal")
	}
	require.Contains(t, r.Stdout, `\x1b]0;pwned\x07\x1b[2J\u009bboom\x0ddone`)
}

// A command type's process sees none of sluice's secrets (the database URL,
// the API tokens, a webhook secret in sluice's environment), only the few
// variables programs need, the job's own and what the type's env: names,
// here from sluice's environment through the config file.
func TestCommandGetsOnlyItsOwnEnvironment(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg := typoConfig(t, tg.URL, `  show_env:
    command: ["env"]
    env: { APP_ENV: "${SLUICE_TEST_APP_ENV}" }
`)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix, "SLUICE_TEST_APP_ENV=staging", "SLUICE_TOKEN=" + testToken, "HOOK_SECRET=hook-secret"}
	r := run(t, env, "", "--config", cfg, "enqueue", "show_env")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "--config", cfg, "run", "--max-seconds", "10")
	require.Equal(t, 0, r.Code, r.Stderr)
	j := onlyJob(t, d, "show_env")
	require.Equal(t, sluicetype.StatusSuccess, j.Status, j.LastError)
	lines := strings.Split(j.Result, "\n")
	require.Contains(t, lines, "APP_ENV=staging")
	require.Contains(t, lines, "SLUICE_JOB_TYPE=show_env")
	require.Contains(t, lines, "PATH="+os.Getenv("PATH"))
	for _, secret := range []string{testToken, "hook-secret", tg.URL, "SLUICE_PREFIX=", "SLUICE_TEST_APP_ENV="} {
		require.NotContains(t, j.Result, secret)
	}
}
