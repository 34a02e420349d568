package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// `sluice work` with a tracing section in sluice.yaml exports each run's
// span over OTLP/HTTP to the configured endpoint, and flushes what is
// buffered when it stops.
func TestTracingExportsFromConfig(t *testing.T) {
	t.Parallel()
	_, tg := testdb.OpenURL(t, "sqlite")
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		t.Logf("collector got %s %s (%d bytes)", r.Method, r.URL.Path, len(b))
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close)

	cfg, logPath := writeConfig(t, dbConfig(tg, "tracing: { endpoint: \""+collector.URL+"\", service_name: traced-sluice, sampling: 1 }\n"))
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	w := startWorker(t, env, "work", "--config", cfg)
	r := run(t, env, "", "--config", cfg, "enqueue", "append")
	require.Equal(t, 0, r.Code, r.Stderr)
	testdb.WaitFor(t, 30*time.Second, "the job ran", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.TrimSpace(string(b)) != ""
	})
	require.NoError(t, w.Term(t, 2*time.Minute))

	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(bodies, nil)
	require.NotEmpty(t, bodies, "no OTLP export reached the collector")
	require.True(t, bytes.Contains(all, []byte("traced-sluice")), "the export names the service")
	require.True(t, bytes.Contains(all, []byte("sluice.run append")), "the export holds the job's run span")
}
