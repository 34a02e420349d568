package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// appliedReceiver is the receiver docs/http-api.md "Handler protocol" asks for: it records each
// Idempotency-Key it applied in a table, and answers a key it already has
// from that record without applying it again. failFirst makes the first
// delivery of each key apply and then answer 503, as a receiver that
// committed and lost its answer does, so that the retry must carry the
// same key.
type appliedReceiver struct {
	db        *sql.DB
	table     string
	ph        func(int) string
	failFirst bool

	mu      sync.Mutex
	headers []http.Header
}

func newAppliedReceiver(t *testing.T, d driver.Driver, tg testdb.Target, failFirst bool) (*appliedReceiver, *httptest.Server) {
	r := &appliedReceiver{db: d.DB(), table: tg.Prefix + "applied", failFirst: failFirst,
		ph: func(int) string { return "?" }}
	if tg.Name == "postgres" {
		r.ph = func(i int) string { return fmt.Sprintf("$%d", i) }
	}
	_, err := r.db.Exec(`CREATE TABLE ` + r.table + ` (idem VARCHAR(191) PRIMARY KEY, business_key VARCHAR(191) NOT NULL, job_id BIGINT NOT NULL)`)
	require.NoError(t, err)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *appliedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var m struct{ ID int64 }
	body, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, req.Header.Clone())
	idem := req.Header.Get("Idempotency-Key")
	var n int
	if err := r.db.QueryRow(`SELECT COUNT(*) FROM `+r.table+` WHERE idem = `+r.ph(1), idem).Scan(&n); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if n > 0 {
		fmt.Fprintf(w, "already applied %s", idem)
		return
	}
	if _, err := r.db.Exec(`INSERT INTO `+r.table+` (idem, business_key, job_id) VALUES (`+r.ph(1)+`, `+r.ph(2)+`, `+r.ph(3)+`)`,
		idem, req.Header.Get("X-Sluice-Key"), m.ID); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if r.failFirst {
		http.Error(w, "applied, then lost the answer", 503)
		return
	}
	fmt.Fprintf(w, "applied %s", idem)
}

// applied returns the job ids the receiver applied, in order.
func (r *appliedReceiver) applied(t *testing.T) []int64 {
	rows, err := r.db.Query(`SELECT job_id FROM ` + r.table + ` ORDER BY job_id`)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// A business key reused by a later job (dedupe active after the first job
// finished; dedupe permanent after a purge) is new work: a receiver that
// applies each Idempotency-Key once applies both jobs, and a retry of one
// job carries that job's key again. The key is job-<id>-<created_at µs>,
// the business key travels in X-Sluice-Key.
func TestIdempotencyKeyNamesOneJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		recv, srv := newAppliedReceiver(t, d, tg, false)
		cfg := writeBatchConfig(t, fmt.Sprintf(`types:
  sync: { http: { url: "%s/sync" } }
`, srv.URL))
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
		sl := func(args ...string) string {
			t.Helper()
			r := run(t, env, "", append([]string{"--config", cfg}, args...)...)
			require.Equal(t, 0, r.Code, "%v: %s", args, r.Stderr)
			return r.Stdout
		}
		idOf := func(out string) int64 {
			var r struct {
				ID        int64
				Duplicate bool
			}
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.False(t, r.Duplicate, out)
			return r.ID
		}

		first := idOf(sl("enqueue", "sync", "--key", "cust:9001", "--dedupe", "active"))
		require.Contains(t, sl("run"), `"done":1`)
		second := idOf(sl("enqueue", "sync", "--key", "cust:9001", "--dedupe", "active"))
		require.Contains(t, sl("run"), `"done":1`)
		require.Equal(t, []int64{first, second}, recv.applied(t), "the second job with key cust:9001 is applied, not dropped")

		perm := idOf(sl("enqueue", "sync", "--key", "cust:9002"))
		require.Contains(t, sl("run"), `"done":1`)
		require.Contains(t, sl("jobs", "purge", "--status", "success", "--older-than", "0s"), "deleted 3 jobs")
		again := idOf(sl("enqueue", "sync", "--key", "cust:9002"))
		require.Contains(t, sl("run"), `"done":1`)
		require.Equal(t, []int64{first, second, perm, again}, recv.applied(t), "a permanent key reused after the purge is applied")

		for _, h := range recv.headers {
			id := h.Get("X-Sluice-Job-Id")
			require.Regexp(t, `^job-`+id+`-[0-9]{16}$`, h.Get("Idempotency-Key"))
			require.Contains(t, []string{"cust:9001", "cust:9002"}, h.Get("X-Sluice-Key"))
		}
		j := testdb.Get(t, t.Context(), d, again)
		require.Equal(t, fmt.Sprintf("job-%d-%d", again, j.CreatedAt.UnixMicro()), recv.headers[3].Get("Idempotency-Key"),
			"the header is Job.IdempotencyKey() of the stored row")
	})
}

// Every attempt of one job sends the same Idempotency-Key: the receiver
// applied the first delivery and lost its answer, and the retry is
// answered from the record instead of applied again.
func TestIdempotencyKeyHoldsAcrossRetries(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		recv, srv := newAppliedReceiver(t, d, tg, true)
		cfg := writeBatchConfig(t, fmt.Sprintf(`types:
  sync: { http: { url: "%s/sync" }, backoff: { base: 1ms, max: 1ms } }
`, srv.URL))
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
		r := run(t, env, "", "--config", cfg, "enqueue", "sync")
		require.Equal(t, 0, r.Code, r.Stderr)
		// A pass retries a due job itself; another pass picks up what it left.
		testdb.WaitFor(t, 10*time.Second, "the job succeeds", func() bool {
			r = run(t, env, "", "--config", cfg, "run")
			require.Equal(t, 0, r.Code, r.Stderr)
			return testdb.AllJobs(t, d, sluicetype.ListParams{})[0].Status == sluicetype.StatusSuccess
		})
		require.Len(t, recv.applied(t), 1, "applied once")
		require.GreaterOrEqual(t, len(recv.headers), 2)
		for _, h := range recv.headers {
			require.Equal(t, recv.headers[0].Get("Idempotency-Key"), h.Get("Idempotency-Key"), "every attempt sends the same key")
			require.NotContains(t, h, "X-Sluice-Key", "a keyless job sends no X-Sluice-Key")
		}
		rows := testdb.AllJobs(t, d, sluicetype.ListParams{})
		require.Len(t, rows, 1)
		require.Equal(t, sluicetype.StatusSuccess, rows[0].Status)
		require.Contains(t, rows[0].Result, "already applied job-")
	})
}
