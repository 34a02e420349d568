package setup_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/sluicetype"
)

// The rules of the packages a file describes, checked by Check, and the
// mapping of the file's settings to the library's. Each rejection goes
// through Parse, package config's rules and then Check's, as the CLI
// loads a file.

const day = 24 * time.Hour

// The example of docs/reference.md "Config file", which defines every
// section, including the order_scan type that its schedule names.
const specExample = `
db: mysql://app:secret@127.0.0.1:3306/app
listen: 127.0.0.1:8080
auth:
  tokens: ["${SLUICE_TOKEN}"]       # Bearer tokens for the API, /v1/run and the dashboard
  allow_cidrs: ["127.0.0.1/32"]     # optional client allowlist
  query_token: false                # accept ?token= (the seed's crontab style); off by default
queues:
  default: { concurrency: 10 }
  mail:    { concurrency: 2, rate: "5/s", paused: false }
types:
  order_sync:
    queue: default
    http: { url: "http://127.0.0.1:9000/jobs/order_sync", timeout: 30s, secret: "${HOOK_SECRET}" }
    max_attempts: 5
    lease: 5m
    backoff: { base: 1m, max: 1h }
    dedupe: permanent                 # or: active
  report:
    command: ["php", "think", "report:build"]
    timeout: 10m
    permanent_exit_codes: [65]
  order_scan:
    http: { url: "https://app.example.com/jobs/order_scan", headers: { X-Tenant: acme } }
schedules:
  close_expired_orders: { cron: "*/5 * * * *", timezone: "Asia/Shanghai", type: order_scan, payload: {}, overlap: forbid, catch_up: 1 }
retention: { success: 7d, failed: 30d, cancelled: 7d }
`

func TestSpecExample(t *testing.T) {
	t.Setenv("SLUICE_TOKEN", "tok-123-Jd7Vn2Qs9Lx4Pf8R")
	t.Setenv("HOOK_SECRET", "hook-456")
	f, err := setup.Parse("sluice.yaml", []byte(specExample))
	require.NoError(t, err)

	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	want := &config.File{
		DB:     "mysql://app:secret@127.0.0.1:3306/app",
		Listen: "127.0.0.1:8080",
		Auth: config.Auth{
			Tokens:     []config.Token{{Token: "tok-123-Jd7Vn2Qs9Lx4Pf8R", Scope: "admin", Plain: true}},
			AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		},
		Queues: map[string]config.Queue{
			"default": {Concurrency: 10},
			"mail":    {Concurrency: 2, Rate: config.Rate{N: 5, Per: time.Second}},
		},
		Types: map[string]config.Type{
			"order_sync": {
				Queue:       "default",
				HTTP:        &config.HTTP{URL: "http://127.0.0.1:9000/jobs/order_sync", Timeout: 30 * time.Second, Secret: "hook-456"},
				Lease:       5 * time.Minute,
				MaxAttempts: 5,
				Backoff:     config.Backoff{Base: time.Minute, Max: time.Hour},
				Dedupe:      "permanent",
			},
			"report": {
				Command:            config.Argv{"php", "think", "report:build"},
				Timeout:            10 * time.Minute,
				PermanentExitCodes: []int{65},
			},
			"order_scan": {
				HTTP: &config.HTTP{URL: "https://app.example.com/jobs/order_scan", Headers: map[string]string{"X-Tenant": "acme"}},
			},
		},
		Schedules: map[string]config.Schedule{
			"close_expired_orders": {Cron: "*/5 * * * *", Timezone: "Asia/Shanghai", Location: shanghai, Type: "order_scan",
				Payload: json.RawMessage(`{}`), Overlap: "forbid", CatchUp: 1},
		},
		Retention: config.Retention{Success: 7 * day, Failed: 30 * day, Cancelled: 7 * day},
		Tracing:   config.Tracing{Protocol: config.ProtocolHTTP, ServiceName: "sluice", Sampling: 1},
	}
	// The file's settings only; Parse keeps the key lines for errors.
	require.Equal(t, want.Types, f.Types)
	require.Equal(t, want.Queues, f.Queues)
	require.Equal(t, want.Schedules, f.Schedules)
	require.Equal(t, []any{want.DB, want.Listen, want.Auth, want.Retention, want.History, want.Tracing},
		[]any{f.DB, f.Listen, f.Auth, f.Retention, f.History, f.Tracing})

	types, err := setup.Types(f)
	require.NoError(t, err)
	require.Len(t, types, 3)
	require.IsType(t, &webhook.Handler{}, types["order_sync"].Handler)
	require.IsType(t, &command.Handler{}, types["report"].Handler)
	require.Equal(t, sluice.Type{Handler: types["report"].Handler, Timeout: 10 * time.Minute}, types["report"],
		"what the file leaves out stays the library's to fill in")
	require.Equal(t, sluice.Type{Handler: types["report"].Handler, Queue: "default", Timeout: 10 * time.Minute,
		Lease: 5 * time.Minute, MaxAttempts: 5, Backoff: sluice.Backoff{Base: time.Minute, Max: time.Hour}, Dedupe: "permanent",
		OnStuck: sluicetype.DefaultOnStuck, Circuit: sluice.Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown}},
		types["report"].WithDefaults())
	require.Equal(t, map[sluicetype.Status]time.Duration{"success": 7 * day, "failed": 30 * day, "cancelled": 7 * day},
		setup.Retention(f.Retention))
}

// What the file leaves out runs with the library's defaults.
func TestDefaults(t *testing.T) {
	f, err := setup.Parse("sluice.yaml", []byte(`
queues:
  default:
types:
  ping: { http: { url: "http://localhost/ping" } }
schedules:
  tick: { cron: "@every 30s", type: ping }
retention: { failed: 60d }
`))
	require.NoError(t, err)
	require.Equal(t, config.Queue{}, f.Queues["default"])
	ping := setup.Type(f.Types["ping"]).WithDefaults()
	require.Equal(t, sluice.DefaultQueue, ping.Queue)
	require.Equal(t, sluice.DefaultLease, ping.Lease)
	require.Equal(t, sluice.DefaultMaxAttempts, ping.MaxAttempts)
	require.Equal(t, sluice.Backoff{Base: sluice.DefaultBackoffBase, Max: sluice.DefaultBackoffMax}, ping.Backoff)
	require.Equal(t, "permanent", ping.Dedupe)
	require.Nil(t, f.Types["ping"].PermanentExitCodes)
	tick := f.Schedules["tick"]
	require.Equal(t, "UTC", tick.Timezone)
	require.Equal(t, time.UTC, tick.Location)
	require.Empty(t, tick.Overlap, "the scheduler's default")
	require.Nil(t, tick.Payload)
	require.Equal(t, map[sluicetype.Status]time.Duration{"failed": 60 * day}, setup.Retention(f.Retention),
		"an unset status keeps the library's retention")

	rt, err := setup.NewRuntime(f, nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]sluice.QueueConfig{"default": {}}, rt.Config.Queues, "concurrency 0 is the library's default")

	f, err = setup.Parse("empty.yaml", nil)
	require.NoError(t, err, "an empty file is all defaults")
	require.Empty(t, setup.Retention(f.Retention))
}

func TestCommandExitCodes(t *testing.T) {
	f, err := setup.Parse("sluice.yaml", []byte(`
types:
  a: { command: [a] }
  b: { command: [b], permanent_exit_codes: [] }
  c: { command: [c], permanent_exit_codes: [2, 65] }
`))
	require.NoError(t, err)
	require.Nil(t, f.Types["a"].PermanentExitCodes, "the command handler's default, EX_DATAERR")
	require.Equal(t, []int{}, f.Types["b"].PermanentExitCodes, "an explicit empty list stays empty")
	require.Equal(t, []int{2, 65}, f.Types["c"].PermanentExitCodes)
}

func TestRejectBadDuration(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    command: [php]\n    timeout: 10 minutes", "types.report.timeout",
		`invalid duration "10 minutes"`)
	requireRejected(t, "retention: { failed: forever }", "retention.failed", `invalid duration "forever"`)
	requireRejected(t, "types: { x: { command: [x], lease: 0s } }", "types.x.lease", "must be positive")
	requireRejected(t, "types: { x: { command: [x], timeout: -1s } }", "types.x.timeout", "must not be negative")
	requireRejected(t, "types: { x: { command: [x], backoff: { base: 2h } } }", "types.x.backoff", "base 2h0m0s is longer than max 1h0m0s")
}

func TestRejectBadURL(t *testing.T) {
	for _, url := range []string{"/jobs/x", "ftp://h/x", "http://", "127.0.0.1:9000/x", "http://h/%zz"} {
		requireRejected(t, "types:\n  x:\n    http: { url: '"+url+"' }", "types.x.http.url", "invalid URL")
	}
	requireRejected(t, "types:\n  x:\n    http: { timeout: 1s }", "types.x.http.url", "required")

	t.Setenv("HOOK_PASS", "hunter2")
	_, err := setup.Parse("sluice.yaml", []byte("types:\n  x:\n    http: { url: 'ftp://hook:${HOOK_PASS}@h/x' }"))
	require.ErrorContains(t, err, `types.x.http.url: invalid URL "ftp://hook:xxxxx@h/x"`, "a password stays out of errors")
}

func TestRejectBadDedupe(t *testing.T) {
	requireRejected(t, "types: { x: { command: [x], dedupe: forever } }", "types.x.dedupe",
		`invalid value "forever": want permanent or active`)
}

func TestRejectBadOverlap(t *testing.T) {
	requireRejected(t, "types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, overlap: queue } }",
		"schedules.s.overlap", `invalid value "queue": want forbid or allow`)
	requireRejected(t, "types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, catch_up: -1 } }",
		"schedules.s.catch_up", "must not be negative")
}

func TestRejectUndefinedQueue(t *testing.T) {
	requireRejected(t, "queues: { default: {} }\ntypes: { x: { command: [x], queue: mail } }", "types.x.queue",
		`queue "mail" is not defined under queues (defined: default)`)
	requireRejected(t, "queues: { mail: {} }\ntypes: { x: { command: [x] } }", "types.x.queue", `queue "default" is not defined`)
	requireRejected(t, "queues: { default: {} }\ntypes: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, queue: bulk } }",
		"schedules.s.queue", `queue "bulk" is not defined`)
}

func TestServerAccessKeys(t *testing.T) {
	f, err := setup.Parse("sluice.yaml", []byte("auth:\n  allowed_hosts: [sluice.internal]\n  trusted_proxies: ['10.0.0.5/32', '10.1.0.0/16']\n  public_url: https://sluice.example.com\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"sluice.internal"}, f.Auth.AllowedHosts)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("10.1.0.0/16")}, f.Auth.TrustedProxies)
	require.Equal(t, "https://sluice.example.com", f.Auth.PublicURL)
	requireRejected(t, "auth: { allowed_hosts: [ok.example, 'http://x.example'] }", "auth.allowed_hosts[1]", "without scheme, port or wildcard")
	requireRejected(t, "auth: { allowed_hosts: ['*.example.com'] }", "auth.allowed_hosts[0]", "without scheme, port or wildcard")
	requireRejected(t, "auth: { trusted_proxies: ['10.0.0.0/40'] }", "auth.trusted_proxies[0]", "invalid CIDR")
	requireRejected(t, "auth: { public_url: 'sluice.example.com' }", "auth.public_url", "want the address browsers use")
	requireRejected(t, "auth: { public_url: 'https://sluice.example.com/dash' }", "auth.public_url", "want the address browsers use")
}

func TestRejectOtherProblems(t *testing.T) {
	for _, tc := range []struct{ yaml, path, msg string }{
		{"db: mongodb://h/db", "db", "unknown database URL scheme"},
		{"db: mysql://h/db\nlisten_db: postgres://h/db", "listen_db", "needs db: in the same file to be a postgres:// URL"},
		{"listen_db: postgres://h/db", "listen_db", "needs db: in the same file"},
		{"db: postgres://h:6432/db?pooler=transaction\nlisten_db: mysql://h/db", "listen_db", "want a direct postgres://"},
		{"types: { x: { command: [x], max_attempts: 0 } }", "types.x.max_attempts", "must be at least 1"},
		{"types: { x: { command: [x], circuit: { threshold: -1 } } }", "types.x.circuit.threshold", "must not be negative"},
		{"types: { x: { command: [x], circuit: { threshold: 3, cooldown: 0s } } }", "types.x.circuit.cooldown", "must be positive"},
		{"types: { x: { command: [x], circuit: { threshold: 3, cooldown: 1m, max_cooldown: 10s } } }", "types.x.circuit.max_cooldown", "shorter than the cooldown"},
		{"queues: { q: { cluster_burst: 3 } }", "queues.q.cluster_burst", "go with a cluster_rate"},
		{"queues: { q: { cluster_rate: 'fast' } }", "queues.q.cluster_rate", "invalid rate"},
		{"types:\n  x: { command: [x] }\n  x: { command: [y] }", "types.x", "key repeated (first set at line 2)"},
		{"types: { x: { http: { url: 'http://h' }, permanent_exit_codes: [65] } }", "types.x.permanent_exit_codes", "only applies to command handlers"},
		{"types: { x: { command: [x], permanent_exit_codes: [256] } }", "types.x.permanent_exit_codes[0]", "out of range"},
		{"types: { x: { http: { url: 'http://h', headers: { Idempotency-Key: k } } } }", "types.x.http.headers.Idempotency-Key", "set by sluice"},
		{"types: { x: { http: { url: 'http://h', timeout: -1s } } }", "types.x.http.timeout", "must not be negative"},
		{"auth: { query_token: maybe }", "auth.query_token", `want true or false, got "maybe"`},
		{"queues: [default]", "queues", "want a mapping of names, got a list"},
		{"auth: { tokens: secret }", "auth.tokens", `want a list, got "secret"`},
		{"types: { " + strings.Repeat("t", 65) + ": { command: [x] } }", "types." + strings.Repeat("t", 65), "at most 64 allowed"},
		{"retention: { success: 0s }", "retention.success", "must be positive"},
		{"history: { keep: 0 }", "history.keep", "must be at least 1"},
		{"tracing: { endpoint: 'otel:4318' }", "tracing.endpoint", "want an http:// or https:// URL"},
		{"tracing: { endpoint: 'http://otel:4317', protocol: grpc }", "tracing.protocol", "only http/protobuf is supported"},
		{"tracing: { endpoint: 'http://otel:4318', sampling: 1.5 }", "tracing.sampling", "want a share from 0 to 1"},
		{"tracing: { service_name: '' }", "tracing.service_name", "must not be empty"},
		{"types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, payload: { 1: a } } }", "schedules.s.payload", "JSON"},
	} {
		requireRejected(t, tc.yaml, tc.path, tc.msg)
	}
}

func TestFairQueueAndCaps(t *testing.T) {
	f, err := setup.Parse("sluice.yaml", []byte(`
queues:
  tenants:
    concurrency: 20
    fair: true
    max_running: 50
    max_running_per_partition: 2
    partition_max_running: { premium-co: 10 }
types:
  mail: { command: [true], queue: tenants, max_running: 5 }
`))
	require.NoError(t, err)
	q := f.Queues["tenants"]
	require.Equal(t, sluice.QueueConfig{Concurrency: 20, Fair: true, MaxRunning: 50, MaxRunningPerPartition: 2,
		PartitionMaxRunning: map[string]int{"premium-co": 10}}, setup.Queue(q))
	types, err := setup.Types(f)
	require.NoError(t, err)
	require.Equal(t, 5, types["mail"].MaxRunning)
}

func TestRejectBadCaps(t *testing.T) {
	requireRejected(t, "queues: { t: { max_running_per_partition: 2 } }", "queues.t.max_running_per_partition", "needs fair: true")
	requireRejected(t, "queues: { t: { fair: true, partition_max_running: { 'a b': 3 } } }", "queues.t.partition_max_running", `partition "a b"`)
	requireRejected(t, "queues: { t: { fair: true, partition_max_running: { a: 0 } } }", "queues.t.partition_max_running", "must be at least 1")
	requireRejected(t, "queues: { t: { max_running: -1 } }", "queues.t.max_running", "must not be negative")
	requireRejected(t, "types: { x: { command: [x], max_running: -1 } }", "types.x.max_running", "must not be negative")
}

func TestClusterRatesOfTypesAndPartitions(t *testing.T) {
	f, err := setup.Parse("sluice.yaml", []byte(`
queues:
  tenants:
    fair: true
    cluster_rate_per_partition: 5/s
    cluster_burst_per_partition: 2
    partition_cluster_rate: { premium-co: 50/s }
types:
  mail: { command: [true], queue: tenants, cluster_rate: 20/s, cluster_burst: 4 }
  sms: { command: [true], queue: tenants, cluster_rate: 120/m }
`))
	require.NoError(t, err)
	require.Equal(t, sluice.QueueConfig{Fair: true, ClusterRatePerPartition: 5,
		ClusterBurstPerPartition: 2, PartitionClusterRate: map[string]float64{"premium-co": 50}}, setup.Queue(f.Queues["tenants"]))
	types, err := setup.Types(f)
	require.NoError(t, err)
	require.Equal(t, 20.0, types["mail"].ClusterRate)
	require.Equal(t, 4, types["mail"].ClusterBurst)
	require.Equal(t, 2.0, types["sms"].ClusterRate)
	require.Zero(t, types["sms"].ClusterBurst, "the client fills in the default burst")
}

func TestRejectBadClusterRates(t *testing.T) {
	requireRejected(t, "types: { x: { command: [x], cluster_rate: 0/s } }", "types.x.cluster_rate", "invalid rate")
	requireRejected(t, "types: { x: { command: [x], cluster_rate: fast } }", "types.x.cluster_rate", "invalid rate")
	requireRejected(t, "types: { x: { command: [x], cluster_burst: 3 } }", "types.x.cluster_burst", "go with a cluster_rate")
	requireRejected(t, "types: { x: { command: [x], cluster_rate: 5/s, cluster_burst: -1 } }", "types.x.cluster_burst", "must be positive")
	requireRejected(t, "queues: { t: { cluster_rate_per_partition: 5/s } }", "queues.t.cluster_rate_per_partition", "needs fair: true")
	requireRejected(t, "queues: { t: { partition_cluster_rate: { a: 5/s } } }", "queues.t.partition_cluster_rate", "needs fair: true")
	requireRejected(t, "queues: { t: { fair: true, cluster_rate_per_partition: 5/x } }", "queues.t.cluster_rate_per_partition", "invalid rate")
	requireRejected(t, "queues: { t: { fair: true, partition_cluster_rate: { 'a b': 5/s } } }", "queues.t.partition_cluster_rate", `partition "a b"`)
	requireRejected(t, "queues: { t: { fair: true, partition_cluster_rate: { a: 0/s } } }", "queues.t.partition_cluster_rate.a", "invalid rate")
	requireRejected(t, "queues: { t: { fair: true, cluster_burst_per_partition: 2 } }", "queues.t.cluster_burst_per_partition", "go with a cluster_rate_per_partition")
	requireRejected(t, "queues: { t: { fair: true, cluster_rate_per_partition: 5/s, cluster_burst_per_partition: -2 } }",
		"queues.t.cluster_burst_per_partition", "must be positive")
}

func TestRejectBadBatches(t *testing.T) {
	const ok = "source: 'SELECT id FROM t'\n    key: [id]\n    sink: { sql: 'DELETE FROM t WHERE id IN ({ids})' }\n"
	b := func(s string) string { return "batches:\n  b:\n    " + s }
	requireRejected(t, b(ok+"    sorce: x"), "batches.b.sorce", "unknown key")
	requireRejected(t, b("source: 'SELECT id FROM t ORDER BY id'\n    key: [id]\n    sink: { sql: x }"), "batches.b.source", "must not contain ORDER BY")
	requireRejected(t, b("source: 'SELECT id FROM t limit 10'\n    key: [id]\n    sink: { sql: x }"), "batches.b.source", "must not contain LIMIT")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    sink: { sql: x }"), "batches.b.key", "required")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id, 'x; DROP TABLE t']\n    sink: { sql: x }"), "batches.b.key[1]", "plain identifier")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]"), "batches.b.sink", "no sink")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { sql: x, http: { url: 'http://h' } }"), "batches.b.sink", "http is set with sql or copy")
	requireRejected(t, b("source: 'SELECT id, at FROM t'\n    key: [at, id]\n    sink: { sql: ['DELETE FROM t WHERE id IN ({id})', 'DELETE FROM u WHERE id <= {max:id}'] }"),
		"batches.b.sink.sql[1]", "{max:id} needs the batch's key to be [id] alone")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { copy: { table: a } }"), "batches.b.sink.copy.db", "required")
	requireRejected(t, b("source: 'SELECT id FROM t'\n    key: [id]\n    sink: { copy: { db: 'sqlite:a.db', table: 'a; DROP' } }"), "batches.b.sink.copy", "plain identifiers")
	requireRejected(t, b(ok+"    chunk: { target: 5 minutes }"), "batches.b.chunk.target", "invalid duration")
	requireRejected(t, b(ok+"    chunk: { size: 10, target: 1s }"), "batches.b.chunk", "not both")
	requireRejected(t, b(ok+"    chunk: { target: 1s, min: 100, max: 50 }"), "batches.b.chunk", "want min (100) <= max (50)")
	requireRejected(t, b("source: 'SELECT id FROM t WHERE a = {shard}'\n    key: [id]\n    sink: { sql: x }\n    shards: { values: [1], query: 'SELECT 1' }"), "batches.b.shards", "exactly one")
	requireRejected(t, b(ok+"    shards: { column: created_at, from: 2024-01-02, to: 2024-01-01, step: 1h }"), "batches.b.shards.to", "after from")
	requireRejected(t, b(ok+"    shards: { column: created_at, from: yesterday, to: 2024-01-01, step: 1h }"), "batches.b.shards.from", "invalid time")
	requireRejected(t, b(ok+"    shards: { values: [1] }"), "batches.b.shards", "need {shard}")
	requireRejected(t, b(ok+"    throttle: { threshold: 3 }"), "batches.b.throttle.threshold", "needs throttle.query")
	requireRejected(t, "batches:\n  'bad name':\n    "+ok, "batches.bad name", "name")
}

// requireRejected checks that yaml fails with an *Error naming the file,
// the key path and the problem.
func requireRejected(t *testing.T, yaml, path, msg string) {
	t.Helper()
	_, err := setup.Parse("sluice.yaml", []byte(yaml))
	require.Error(t, err, "accepted:\n%s", yaml)
	var ce *config.Error
	require.True(t, errors.As(err, &ce), "not a *config.Error: %v", err)
	require.Equal(t, "sluice.yaml", ce.File)
	require.Equal(t, path, ce.Path, "%v", err)
	require.Contains(t, err.Error(), "sluice.yaml: "+path+": ")
	require.Contains(t, err.Error(), msg)
	require.NotContains(t, err.Error(), "\n", "an error is one line")
}

// Check's errors point at the line as package config's do: the key's, or
// for a key the file leaves out its nearest ancestor's.
func TestCheckErrorLine(t *testing.T) {
	_, err := setup.Parse("sluice.yaml", []byte("queues:\n  default: {}\ntypes:\n  x:\n    http:\n      url: ftp://h/x\n"))
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 6, ce.Line, "%v", err)
	require.Equal(t, "sluice.yaml: types.x.http.url: "+ce.Err.Error()+" (line 6)", err.Error())

	_, err = setup.Parse("sluice.yaml", []byte("queues:\n  mail: {}\ntypes:\n  y:\n    command: [y]\n"))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "types.y.queue", ce.Path)
	require.Equal(t, 4, ce.Line, "the type's line: the file sets no queue")
}
