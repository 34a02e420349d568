package postgres_test

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// pooler=transaction is sluice's parameter: pgx never sees it (PgBouncer
// would refuse it as an unknown startup parameter), and it switches pgx
// to a query mode that prepares nothing on the server session.
func TestParseURLPooler(t *testing.T) {
	uc, err := postgres.ParseURL("postgres://u:p@h:6432/db?sslmode=disable&pooler=transaction&application_name=x")
	require.NoError(t, err)
	require.True(t, uc.TransactionPooling)
	require.Equal(t, pgx.QueryExecModeExec, uc.Conn.DefaultQueryExecMode)
	require.NotContains(t, uc.Conn.RuntimeParams, "pooler")
	require.Equal(t, "x", uc.Conn.RuntimeParams["application_name"])

	uc, err = postgres.ParseURL("postgres://u:p@h:6432/db?pooler=transaction&default_query_exec_mode=simple_protocol")
	require.NoError(t, err)
	require.Equal(t, pgx.QueryExecModeSimpleProtocol, uc.Conn.DefaultQueryExecMode, "an explicit safe mode is kept")

	uc, err = postgres.ParseURL("postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write")
	require.NoError(t, err)
	require.False(t, uc.TransactionPooling)
	require.Equal(t, pgx.QueryExecModeCacheStatement, uc.Conn.DefaultQueryExecMode, "a direct URL keeps pgx's statement cache")

	for url, want := range map[string]string{
		"postgres://u:secret@h/db?pooler=statement":                                           "pooler=statement",
		"postgres://u:secret@h/db?pooler=transaction&default_query_exec_mode=cache_statement": "default_query_exec_mode=cache_statement",
		"postgres://u:secret@h/db?pooler=transaction&default_query_exec_mode=describe_exec":   "default_query_exec_mode=describe_exec",
	} {
		_, err := postgres.ParseURL(url)
		require.ErrorContains(t, err, want, url)
		require.NotContains(t, err.Error(), "secret")
	}
}

// Behind a pooler with no listen URL the driver does not listen, so that
// workers probe; with a listen URL it listens there.
func TestPoolerListens(t *testing.T) {
	direct := testdb.URL("postgres", "")
	if _, err := postgres.Open(direct, postgres.Options{}); err != nil {
		if testdb.RequireAll() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	pooled := withParam(direct, "pooler=transaction")
	open := func(url string, opts postgres.Options) driver.Driver {
		t.Helper()
		d, err := postgres.Open(url, opts)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		return d
	}
	d := open(pooled, postgres.Options{})
	_, listens := d.(driver.Listener)
	require.False(t, listens, "a pooled driver without a listen URL must not claim to push wake-ups")
	_, probes := d.(driver.Prober)
	require.True(t, probes)

	_, listens = open(direct, postgres.Options{}).(driver.Listener)
	require.True(t, listens)

	_, err := postgres.Open(pooled, postgres.Options{ListenURL: pooled})
	require.ErrorContains(t, err, "cannot deliver notifications")
}

// A listen URL on another database would never deliver a wake-up; the
// listener proves its reach with a notification sent through the database
// URL and complains when it does not arrive.
func TestListenURLMustReachTheDatabase(t *testing.T) {
	d, tg := testdb.OpenURL(t, "postgres")
	d.Close()
	pooled := withParam(tg.URL, "pooler=transaction")
	base, _, _ := strings.Cut(tg.URL, "?")
	other := base[:strings.LastIndexByte(base, '/')] + "/postgres"

	listen := func(listenURL string) (woke chan string, logs *testdb.SyncBuffer, stop func()) {
		d, err := postgres.Open(pooled, postgres.Options{Prefix: tg.Prefix, ListenURL: listenURL})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		woke, logs = make(chan string, 16), &testdb.SyncBuffer{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.(driver.Listener).Listen(ctx, func(q string) { woke <- q }, slog.New(slog.NewTextHandler(logs, nil)))
		}()
		t.Cleanup(func() { d.Close() })
		return woke, logs, func() { cancel(); <-done }
	}

	_, logs, stop := listen(other)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "must reach the same database") },
		15*time.Second, 50*time.Millisecond, "a listen URL on another database went unnoticed")
	stop()

	// On the right database the wake-ups of jobs inserted through the
	// pooled URL arrive.
	woke, logs, stop := listen(tg.URL)
	defer stop()
	pd, err := postgres.Open(pooled, postgres.Options{Prefix: tg.Prefix})
	require.NoError(t, err)
	defer pd.Close()
	deadline := time.After(15 * time.Second)
	for {
		_, err := pd.Insert(context.Background(), driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "mail", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1}}})
		require.NoError(t, err)
		select {
		case q := <-woke:
			if q == "" {
				continue // the wake-up of every queue once LISTEN is in place
			}
			require.Equal(t, "mail", q)
			require.NotContains(t, logs.String(), "LISTEN connection lost")
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no wake-up through the listen URL within 15s; log:\n%s", logs.String())
		}
	}
}

func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

// Behind a pooler the driver sends no cancel request when a query's
// context ends (PgBouncer 1.18 can crash on one; see dropCancelRequests):
// the query goes on until the server notices the closed connection. A
// direct driver's query is cancelled at once. A TLS cancel cannot be told
// apart, so the connections here are plaintext, as PgBouncer's are by
// default.
func TestPoolerSendsNoCancelRequest(t *testing.T) {
	d, tg := testdb.OpenURL(t, "postgres")
	plain := withParam(tg.URL, "sslmode=disable")
	for _, c := range []struct {
		url       string
		cancelled bool
	}{{plain, true}, {withParam(plain, "pooler=transaction"), false}} {
		pd, err := postgres.Open(c.url, postgres.Options{Prefix: tg.Prefix})
		require.NoError(t, err)
		marker := testdb.Prefix()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = pd.(interface{ DB() *sql.DB }).DB().ExecContext(ctx, "SELECT pg_sleep(60) -- "+marker)
		cancel()
		require.Error(t, err)
		// Judged on state, not on a fixed wait: a cancel request ends the
		// query whenever a loaded server gets to it (waited for), and
		// without one the 60 s sleep is still running a second later.
		running := func() bool {
			var r bool
			require.NoError(t, d.(interface{ DB() *sql.DB }).DB().QueryRow(
				`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1)`, marker).Scan(&r))
			return r
		}
		if c.cancelled {
			testdb.WaitFor(t, 30*time.Second, "the query ended by the cancel request", func() bool { return !running() })
		} else {
			time.Sleep(time.Second)
			require.True(t, running(), "the query was cancelled, though no cancel request may be sent behind a pooler")
			_, err = d.(interface{ DB() *sql.DB }).DB().Exec(
				`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%' || $1 AND pid <> pg_backend_pid()`, marker)
			require.NoError(t, err)
		}
		pd.Close()
	}
}
