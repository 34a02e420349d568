package laravel_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/clients/php/phptest"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// laravelApp is the example app installed in a temporary directory, its
// tables created, its webhook route served by php -S through the HTTP kernel.
type laravelApp struct {
	dir, receiver, prefix string
	env                   []string
	db                    *sql.DB
}

func newLaravelApp(t *testing.T, extraEnv ...string) *laravelApp {
	t.Helper()
	return newLaravelAppOn(t, "mysql", extraEnv...)
}

// newLaravelAppOn is newLaravelApp with the app and sluice on database
// (mysql or postgres): the app's default connection is that one.
func newLaravelAppOn(t *testing.T, database string, extraEnv ...string) *laravelApp {
	t.Helper()
	connection := map[string]string{"mysql": "mysql", "postgres": "pgsql"}[database]
	phptest.Require(t, "pdo_"+connection, "curl")
	phptest.RequireFile(t, "/usr/share/php/Illuminate/autoload.php", "php-laravel-framework")
	d, tg := testdb.OpenURL(t, database)
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	pass, _ := u.User.Password()
	a := &laravelApp{dir: phptest.InstallApp(t, "."), receiver: testdb.FreeAddr(t), prefix: tg.Prefix, db: d.DB()}
	a.env = proctest.Env(append([]string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "APP_PREFIX=" + tg.Prefix,
		"DB_CONNECTION=" + connection, "DB_HOST=" + u.Hostname(), "DB_PORT=" + u.Port(), "DB_DATABASE=" + strings.TrimPrefix(u.Path, "/"),
		"DB_USERNAME=" + u.User.Username(), "DB_PASSWORD=" + pass, "APP_KEY=" + appKey,
		"HOOK_SECRET=laravel-secret", "RECEIVER_ADDR=" + a.receiver, "PHP_CLI_SERVER_WORKERS=4"}, extraEnv...))
	phptest.Run(t, a.dir, a.env, "php", "setup.php")
	a.serve(t, a.receiver)
	return a
}

// serve starts php -S for the app on addr, with env added to the app's.
func (a *laravelApp) serve(t *testing.T, addr string, env ...string) {
	t.Helper()
	out := phptest.Start(t, a.dir, append(append([]string{}, a.env...), env...), "php", "-S", addr, "-t", "public", "public/index.php")
	phptest.WaitListening(t, addr, out)
}

func (a *laravelApp) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, a.db.QueryRow(strings.ReplaceAll(query, "{p}", a.prefix), args...).Scan(&n), query)
	return n
}

// TestLaravelQueueRefusesForeignJobs sends, through sluice's HTTP API with
// a valid token, what anyone who can enqueue could: a Laravel job whose
// command is a gadget chain of Illuminate's own classes (touching a marker
// file when unserialized), the same with a forged signature, and one naming
// another handler. `sluice serve` delivers them; none runs anything, each
// fails at once with the reason. The same delivery, to an app that opts in
// to unsigned jobs (the old adapter's behaviour), does run the chain.
func TestLaravelQueueRefusesForeignJobs(t *testing.T) {
	a := newLaravelApp(t)
	marker := filepath.Join(t.TempDir(), "gadget-ran")
	gadget := []byte(phptest.Run(t, a.dir, a.env, "php", "testdata/gadget.php", marker))
	var req struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(gadget, &req))
	laravelJSON, err := json.Marshal(req.Payload)
	require.NoError(t, err)
	forged, err := json.Marshal(map[string]any{"type": "laravel", "payload": map[string]any{
		"displayName": "App\\Jobs\\SyncOrder", "laravel": laravelJSON, "signature": strings.Repeat("ab", 32)}})
	require.NoError(t, err)
	otherHandler := bytes.Replace(gadget, []byte(`Illuminate\\Queue\\CallQueuedHandler@call`), []byte(`Illuminate\\Foundation\\Console\\Kernel@call`), 1)
	require.NotEqual(t, gadget, otherHandler)

	api := testdb.FreeAddr(t)
	out := phptest.Start(t, a.dir, append(a.env, "SLUICE_TOKEN=t0ken-for-the-test-Nw4Hx8Qa2Ve6Ls1D"), bin, "--config", "testdata/serve.yaml", "serve", "--listen", api)
	phptest.WaitListening(t, api, out)
	ids := map[string]int64{}
	for name, body := range map[string][]byte{"gadget": gadget, "forged": forged, "other handler": otherHandler} {
		r, err := http.NewRequest("POST", "http://"+api+"/v1/jobs", bytes.NewReader(body))
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer t0ken-for-the-test-Nw4Hx8Qa2Ve6Ls1D")
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		var res struct{ ID int64 }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
		resp.Body.Close()
		require.Equal(t, 201, resp.StatusCode, name)
		ids[name] = res.ID
	}
	for name, want := range map[string]string{
		"gadget":        "payload: unsigned Laravel job refused",
		"forged":        "payload.signature: mismatch",
		"other handler": "payload: unsigned Laravel job refused",
	} {
		testdb.WaitFor(t, 60*time.Second, name+" ends", func() bool {
			return a.count(t, `SELECT COUNT(*) FROM {p}jobs WHERE id = ? AND status IN ('success', 'failed')`, ids[name]) == 1
		})
		var status, lastError string
		var attempts int
		require.NoError(t, a.db.QueryRow(`SELECT status, attempts, last_error FROM `+a.prefix+`jobs WHERE id = ?`, ids[name]).Scan(&status, &attempts, &lastError))
		require.Equal(t, "failed", status, name)
		require.Equal(t, 1, attempts, name+": refused at once, not retried")
		require.Contains(t, lastError, want, name)
	}
	require.NoFileExists(t, marker, "the gadget chain ran")

	// The same deliveries to an app that accepts unsigned jobs, as the
	// adapter did before it signed them: the gadget runs, the other handler
	// is still refused (the handler is pinned whatever the flag).
	old := testdb.FreeAddr(t)
	a.serve(t, old, "SLUICE_ACCEPT_UNSIGNED=1")
	status, body := deliver(t, old, otherHandler)
	require.Equal(t, 422, status, body)
	require.Contains(t, body, "payload.job: want Illuminate")
	require.NoFileExists(t, marker)
	status, body = deliver(t, old, gadget)
	require.FileExists(t, marker, "the payload is a working gadget chain where unsigned jobs run (%d %s)", status, body)
}

// deliver posts a job request's payload to the app's webhook route as sluice
// would, signed with the webhook secret, and returns the answer.
func deliver(t *testing.T, addr string, request []byte) (int, string) {
	t.Helper()
	var req struct{ Payload json.RawMessage }
	require.NoError(t, json.Unmarshal(request, &req))
	body := []byte(fmt.Sprintf(`{"id":1,"type":"laravel","key":"","attempt":1,"max_attempts":1,"payload":%s}`, req.Payload))
	r, err := http.NewRequest("POST", "http://"+addr+"/sluice/jobs", bytes.NewReader(body))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", "job-1-1")
	r.Header.Set("X-Sluice-Signature", webhook.SignKey("laravel-secret", time.Now(), "job-1-1", body))
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
