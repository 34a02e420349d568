package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

func TestExampleConfigsAreValid(t *testing.T) {
	t.Setenv("SLUICE_TOKEN", testToken)
	t.Setenv("HOOK_SECRET", "example-secret")
	for _, p := range []string{"../../../../examples/quickstart/sluice.yaml", "../../../../examples/mysql-webhook/sluice.yaml"} {
		_, err := config.Load(p)
		require.NoError(t, err, p)
	}
}

// The example receiver verifies signatures and applies each idempotency
// key once; sluice's webhook jobs go through it.
func TestExampleWebhookReceiver(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	const secret = "s3cret"
	recv := exec.Command("python3", "../../../../examples/mysql-webhook/receiver.py", "--port", fmt.Sprint(port), "--db", filepath.Join(dir, "effects.db"))
	recv.Env = append(os.Environ(), "HOOK_SECRET="+secret)
	require.NoError(t, recv.Start())
	t.Cleanup(func() { recv.Process.Kill(); recv.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	post := func(sig, key string, body []byte) (int, string) {
		req, err := http.NewRequest("POST", base+"/jobs/order_sync", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Sluice-Signature", sig)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	body := []byte(`{"id":7,"type":"order_sync","key":"order:7","attempt":1,"max_attempts":5,"payload":{}}`)
	code, _ := post(webhook.Sign("wrong", time.Now(), body), "order:7", body)
	require.Equal(t, 401, code, "a forged signature is refused")
	code, first := post(webhook.Sign(secret, time.Now(), body), "order:7", body)
	require.Equal(t, 200, code)
	retry := bytes.Replace(body, []byte(`"attempt":1`), []byte(`"attempt":2`), 1)
	code, second := post(webhook.Sign(secret, time.Now(), retry), "order:7", retry)
	require.Equal(t, 200, code)
	require.Equal(t, first, second, "a repeated delivery is answered from the first, not applied again")

	// End to end: the example's own config, run as its header says, with
	// its database and the app's address given by the variables it names:
	// a signed webhook job enqueued and run by `sluice run`. Nothing passes
	// --db, and run drops any SLUICE_DB of the test's environment, which
	// would win over the config's db:.
	d, tg := testdb.OpenURL(t, "mysql")
	cfg, err := filepath.Abs("../../../../examples/mysql-webhook/sluice.yaml")
	require.NoError(t, err)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix, "SLUICE_EXAMPLE_DB=" + tg.URL, "SLUICE_EXAMPLE_APP=" + base,
		"HOOK_SECRET=" + secret, "SLUICE_TOKEN=" + testToken}
	r := run(t, env, "", "--config", cfg, "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "--config", cfg, "enqueue", "order_sync", "--key", "order:8", "--payload", `{"order":8}`)
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "--config", cfg, "run")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.JSONEq(t, `{"ok":true,"done":1,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "the job is in the database the config's db: names")
	require.Equal(t, sluicetype.StatusSuccess, jobs[0].Status)
	require.True(t, strings.Contains(jobs[0].Result, `"applied": "order_sync"`), jobs[0].Result)
}

// The quickstart command of README.md "Quickstart" works as documented.
func TestQuickstartScript(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", "examples/quickstart/run.sh")
	cmd.Dir = "../../../.."
	cmd.Env = append(os.Environ(), "SLUICE_BIN="+bin, "SLUICE_DB=", "SLUICE_PREFIX=", "SLUICE_CONFIG=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	require.Contains(t, s, `{"id":1,"duplicate":true}`)
	require.Equal(t, 3, strings.Count(s, "success  default  greet  welcome:"), s)
	// The listing is the enqueued jobs', not the schedule's, however long the run.
	require.NotContains(t, s, "sched:heartbeat:", s)
	require.Contains(t, s, `"result": "job 1 (attempt 1): `)
	require.Contains(t, s, "the worker shut down cleanly")
}
