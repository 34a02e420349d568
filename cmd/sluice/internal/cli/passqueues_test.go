package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// mailConfig configures one type, mail, on the queue emails: a config
// with no job on the default queue, as a Laravel app's ->onQueue('emails').
const mailConfig = `queues:
  emails: { concurrency: 2 }
types:
  mail:
    queue: emails
    command: ["true"]
`

// Issue 33 "Cron passes and queues": a pass without a queue (sluice run,
// POST /v1/run) answered done:0 every minute while the config's jobs
// waited on another queue, and stamped their type as served, hiding them
// from "waiting for a handler". It now runs the queues its types are
// configured for; a pass asked for a queue that none is configured for
// says so and stamps nothing it did not claim.
func TestPassRunsTheConfiguredQueues(t *testing.T) {
	t.Parallel()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			_, tg := testdb.OpenURL(t, name)
			cfg := proctest.Config(t, tg.URL, mailConfig)
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			enqueue := func() {
				t.Helper()
				r := run(t, env, "", "--config", cfg, "enqueue", "mail")
				require.Equal(t, 0, r.Code, r.Stderr)
			}
			enqueue()
			enqueue()

			r := run(t, env, "", "--config", cfg, "run", "--queue", "default", "--max-seconds", "5")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.JSONEq(t, `{"ok":true,"done":0,"retried":0,"failed":0,"requeued":0,"warnings":[
				"no job type of this config is configured for queue default (they are for emails): the pass ran none of their queues and claims only jobs of theirs sent to default explicitly; leave the queue out to run the configured ones"]}`, r.Stdout)
			require.Contains(t, r.Stderr, "the pass ran none of their queues", "the warning is logged too")
			r = run(t, env, "", "--config", cfg, "stats", "--json")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.Contains(t, r.Stdout, `"waiting_for_handler":[{"type":"mail","pending":2}]`,
				"a pass that did not claim from emails does not stamp mail as served")

			r = run(t, env, "", "--config", cfg, "run", "--max-seconds", "5")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.JSONEq(t, `{"ok":true,"done":2,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
			r = run(t, env, "", "--config", cfg, "stats", "--json")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.Contains(t, r.Stdout, `"waiting_for_handler":[]`)

			enqueue()
			base := servePasses(t, env, cfg)
			code, _, body := httpDo(t, "POST", base+"/v1/run?max_seconds=5")
			require.Equal(t, http.StatusOK, code, body)
			require.JSONEq(t, `{"ok":true,"done":1,"retried":0,"failed":0,"requeued":0}`, body)
		})
	}
}

// Issue 33: a job sent to a queue that no config lists (Laravel's
// ->onQueue('emails')) was accepted and waited forever unseen. Its
// enqueue now warns (the answer's warnings, a log line on stderr), and its
// jobs show as waiting in a queue nothing runs in `sluice stats` (and
// --json), GET /v1/stats and sluice_jobs_in_unserved_queue, until a
// process that runs the queue, whose config this one does not see, claims
// from it.
func TestJobsInUnservedQueue(t *testing.T) {
	t.Parallel()
	const warning = "queue emails: no config here lists it and no worker or pass has claimed from it in the last 1h; its jobs wait until one runs it"
	// Side by side: each database's case spends its time in passes
	// and a metrics refresh.
	testdb.ForEach(t, func(t *testing.T, name string) {
		_, tg := testdb.OpenURL(t, name)
		cfg := typoConfig(t, tg.URL, "")
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		r := run(t, env, "", "--config", cfg, "enqueue", "greet", "--queue", "emails")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, `"warnings":["`+warning+`"]`)
		require.Contains(t, r.Stderr, "enqueued a job to a queue nothing runs")
		require.Contains(t, r.Stderr, "queue=emails")
		r = run(t, env, "", "--config", cfg, "enqueue", "greet")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.NotContains(t, r.Stdout+r.Stderr, "nothing runs", "the config lists default")

		r = run(t, env, "", "--config", cfg, "stats")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Regexp(t, `\nWAITING IN A QUEUE NOTHING RUNS +PENDING\ndefault +1\nemails +1\n`, r.Stdout)
		r = run(t, env, "", "--config", cfg, "stats", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, `"unserved_queues":[{"queue":"default","pending":1},{"queue":"emails","pending":1}]`,
			"no process has claimed from either yet")

		base := servePasses(t, env, cfg)
		code, _, body := httpDo(t, "POST", base+"/v1/run?max_seconds=5")
		require.Equal(t, http.StatusOK, code, body)
		require.JSONEq(t, `{"ok":true,"done":1,"retried":0,"failed":0,"requeued":0}`, body)
		code, body = httpPost(t, base+"/v1/jobs", `{"type":"greet","queue":"emails"}`)
		require.Equal(t, http.StatusCreated, code, body)
		require.Contains(t, body, `"warnings":["`+warning+`"]`)
		code, body = httpPost(t, base+"/v1/jobs/many", `[{"type":"greet","queue":"emails"},{"type":"greet"}]`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"warnings":["`+warning+`"]`)
		code, _, body = httpDo(t, "GET", base+"/v1/stats")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"unserved_queues":[{"queue":"emails","pending":3}]`, "the pass served default")
		require.Eventually(t, func() bool {
			_, _, body = httpDo(t, "GET", base+"/metrics")
			return strings.Contains(body, `sluice_jobs_in_unserved_queue{queue="emails"} 3`)
		}, 30*time.Second, 200*time.Millisecond)
		require.NotContains(t, body, `sluice_jobs_in_unserved_queue{queue="default"}`)

		// Another process runs emails: a pass with its own config. This
		// one's config still does not list emails, but sees it served.
		other := proctest.Config(t, tg.URL, `queues:
  emails: { concurrency: 2 }
types:
  greet:
    queue: emails
    command: ["true"]
`)
		r = run(t, env, "", "--config", other, "run", "--max-seconds", "5")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.JSONEq(t, `{"ok":true,"done":3,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
		r = run(t, env, "", "--config", cfg, "enqueue", "greet", "--queue", "emails")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.NotContains(t, r.Stdout+r.Stderr, "nothing runs", "emails is served by the other process")
		r = run(t, env, "", "--config", cfg, "stats", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, `"unserved_queues":[]`)
	})
}

// httpPost posts a JSON body and returns the status and the answer.
func httpPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// servePasses starts `sluice serve --no-workers` on cfg, for passes over
// HTTP, and returns its base URL once it answers.
func servePasses(t *testing.T, env []string, cfg string) string {
	t.Helper()
	addr := testdb.FreeAddr(t)
	startWorker(t, env, "--config", cfg, "serve", "--no-workers", "--listen", addr)
	base := "http://" + addr
	require.Eventually(t, func() bool { return proctest.Healthy(base) }, time.Minute, 50*time.Millisecond)
	return base
}
