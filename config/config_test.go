package config_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/sluicetype"
)

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
	t.Setenv("SLUICE_TOKEN", "tok-123")
	t.Setenv("HOOK_SECRET", "hook-456")
	f, err := config.Parse("sluice.yaml", []byte(specExample))
	require.NoError(t, err)

	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	want := &config.File{
		DB:     "mysql://app:secret@127.0.0.1:3306/app",
		Listen: "127.0.0.1:8080",
		Auth: config.Auth{
			Tokens:     []string{"tok-123"},
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
				Circuit:     config.Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown},
			},
			"report": {
				Queue:              "default",
				Command:            config.Argv{"php", "think", "report:build"},
				Timeout:            10 * time.Minute,
				Lease:              5 * time.Minute,
				MaxAttempts:        5,
				Backoff:            config.Backoff{Base: time.Minute, Max: time.Hour},
				Dedupe:             "permanent",
				Circuit:            config.Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown},
				PermanentExitCodes: []int{65},
			},
			"order_scan": {
				Queue:       "default",
				HTTP:        &config.HTTP{URL: "https://app.example.com/jobs/order_scan", Headers: map[string]string{"X-Tenant": "acme"}},
				Lease:       5 * time.Minute,
				MaxAttempts: 5,
				Backoff:     config.Backoff{Base: time.Minute, Max: time.Hour},
				Dedupe:      "permanent",
				Circuit:     config.Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown},
			},
		},
		Schedules: map[string]config.Schedule{
			"close_expired_orders": {Cron: "*/5 * * * *", Timezone: "Asia/Shanghai", Location: shanghai, Type: "order_scan",
				Payload: json.RawMessage(`{}`), Overlap: "forbid", CatchUp: 1},
		},
		Retention: config.Retention{Success: 7 * day, Failed: 30 * day, Cancelled: 7 * day},
		History:   config.History{Keep: driver.DefaultKeepAttempts},
		Tracing:   config.Tracing{Protocol: config.ProtocolHTTP, ServiceName: "sluice", Sampling: 1},
	}
	require.Equal(t, want, f)

	types, err := f.SluiceTypes()
	require.NoError(t, err)
	require.Len(t, types, 3)
	require.IsType(t, &webhook.Handler{}, types["order_sync"].Handler)
	require.IsType(t, &command.Handler{}, types["report"].Handler)
	require.Equal(t, sluice.Type{Handler: types["report"].Handler, Queue: "default", Timeout: 10 * time.Minute,
		Lease: 5 * time.Minute, MaxAttempts: 5, Backoff: sluice.Backoff{Base: time.Minute, Max: time.Hour}, Dedupe: "permanent",
		Circuit: sluice.Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown}},
		types["report"])
}

func TestDefaults(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
queues:
  default:
types:
  ping: { http: { url: "http://localhost/ping" } }
schedules:
  tick: { cron: "@every 30s", type: ping }
`))
	require.NoError(t, err)
	require.Equal(t, config.Queue{Concurrency: 10}, f.Queues["default"])
	ping := f.Types["ping"]
	require.Equal(t, "default", ping.Queue)
	require.Equal(t, sluice.DefaultLease, ping.Lease)
	require.Equal(t, sluice.DefaultMaxAttempts, ping.MaxAttempts)
	require.Equal(t, config.Backoff{Base: sluice.DefaultBackoffBase, Max: sluice.DefaultBackoffMax}, ping.Backoff)
	require.Equal(t, "permanent", ping.Dedupe)
	require.Nil(t, ping.PermanentExitCodes)
	tick := f.Schedules["tick"]
	require.Equal(t, "UTC", tick.Timezone)
	require.Equal(t, time.UTC, tick.Location)
	require.Equal(t, "forbid", tick.Overlap)
	require.Nil(t, tick.Payload)
	require.Equal(t, config.Retention{Success: 7 * day, Failed: 30 * day, Cancelled: 7 * day}, f.Retention)
	require.Equal(t, map[sluicetype.Status]time.Duration{"success": 7 * day, "failed": 30 * day, "cancelled": 7 * day}, f.Retention.Map())

	f, err = config.Parse("empty.yaml", nil)
	require.NoError(t, err, "an empty file is all defaults")
	require.Equal(t, 7*day, f.Retention.Success)
}

func TestCommandExitCodes(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
types:
  a: { command: [a] }
  b: { command: [b], permanent_exit_codes: [] }
  c: { command: [c], permanent_exit_codes: [2, 65] }
`))
	require.NoError(t, err)
	require.Equal(t, []int{65}, f.Types["a"].PermanentExitCodes, "commands default to EX_DATAERR")
	require.Equal(t, []int{}, f.Types["b"].PermanentExitCodes, "an explicit empty list stays empty")
	require.Equal(t, []int{2, 65}, f.Types["c"].PermanentExitCodes)
}

func TestDurationsAndRates(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
queues:
  a: { rate: "100/m" }
  b: { rate: "1000/h" }
  c: { rate: "10/30s" }
types:
  x: { command: [x], queue: a, timeout: 1h30m, lease: 2w, backoff: { base: 1.5s, max: 1d } }
retention: { success: 36h }
`))
	require.NoError(t, err)
	require.Equal(t, config.Rate{N: 100, Per: time.Minute}, f.Queues["a"].Rate)
	require.Equal(t, config.Rate{N: 1000, Per: time.Hour}, f.Queues["b"].Rate)
	require.Equal(t, config.Rate{N: 10, Per: 30 * time.Second}, f.Queues["c"].Rate)
	x := f.Types["x"]
	require.Equal(t, 90*time.Minute, x.Timeout)
	require.Equal(t, 14*day, x.Lease)
	require.Equal(t, config.Backoff{Base: 1500 * time.Millisecond, Max: day}, x.Backoff)
	require.Equal(t, 36*time.Hour, f.Retention.Success)
	require.Equal(t, 30*day, f.Retention.Failed, "unset keys keep their default")
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("WORKERS", "4")
	t.Setenv("HOOK_HOST", "hooks.internal:9000")
	t.Setenv("EMPTY", "")
	// A value that would add keys if it were pasted into the YAML text.
	t.Setenv("TRICKY", "s3cret\"\nevil: [1]\n# ")
	f, err := config.Parse("sluice.yaml", []byte(`
# ${NOT_SET_IN_A_COMMENT} is not expanded
queues:
  default:
    concurrency: ${WORKERS}
  mail: { concurrency: "${WORKERS}", paused: "${PAUSED:-true}" }
types:
  hook:
    http:
      url: "http://${HOOK_HOST}/jobs?region=${REGION:-eu}&tier=${EMPTY:-free}"
      secret: ${TRICKY}
      headers: { X-Literal: "$${NOT_EXPANDED}", X-Count: "${WORKERS}" }
schedules:
  s:
    cron: "@hourly"
    type: hook
    payload:
      workers: ${WORKERS}
      quoted: "${WORKERS}"
      name: ${HOOK_HOST}
      on: ${ON:-true}
`))
	require.NoError(t, err)
	require.Equal(t, 4, f.Queues["default"].Concurrency, "an unquoted variable is typed after expansion")
	require.Equal(t, config.Queue{Concurrency: 4, Paused: true}, f.Queues["mail"], "a quoted one is read as the key's type")
	hook := f.Types["hook"].HTTP
	require.Equal(t, "http://hooks.internal:9000/jobs?region=eu&tier=free", hook.URL)
	require.Equal(t, "s3cret\"\nevil: [1]\n# ", hook.Secret, "a value stays one scalar")
	require.Equal(t, map[string]string{"X-Literal": "${NOT_EXPANDED}", "X-Count": "4"}, hook.Headers)
	require.JSONEq(t, `{"workers":4,"quoted":"4","name":"hooks.internal:9000","on":true}`, string(f.Schedules["s"].Payload),
		"in a payload, quoting decides the type")
}

func TestEnvExpansionErrors(t *testing.T) {
	t.Setenv("EMPTY", "")
	for _, tc := range []struct{ yaml, path, msg string }{
		{`listen: "${SLUICE_TEST_UNSET}"`, "listen", "environment variable SLUICE_TEST_UNSET is not set"},
		{`listen: "${SLUICE_TEST_UNSET"`, "listen", "unterminated ${"},
		{`listen: "${1BAD}"`, "listen", "bad reference ${1BAD}"},
		{`auth: { tokens: ["${EMPTY}"] }`, "auth.tokens[0]", "empty token"},
		{"types:\n  x:\n    http: { url: \"http://h\", secret: \"${EMPTY}\" }", "types.x.http.secret", "empty secret"},
		{"types:\n  x:\n    http:\n      url: http://h\n      secret: ${EMPTY}", "types.x.http.secret", "empty secret"},
		{"types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, payload: { a: '${SLUICE_TEST_UNSET}' } } }",
			"schedules.s.payload.a", "SLUICE_TEST_UNSET is not set"},
	} {
		requireRejected(t, tc.yaml, tc.path, tc.msg)
	}
}

// A secret whose variable is unset (an API token, a webhook's secret or
// header) fails only the commands that use it: Parse accepts the file and
// Unresolved names it, with its line, for the sections asked about.
func TestSecretsResolvedWhereUsed(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`auth: { tokens: ["${SLUICE_TEST_UNSET}"] }
types:
  hook:
    http: { url: "http://h", secret: "${SLUICE_TEST_UNSET2}", headers: { X-Key: "${SLUICE_TEST_UNSET3}" } }
`))
	require.NoError(t, err)
	require.EqualError(t, f.Unresolved("auth"),
		"sluice.yaml: auth.tokens[0]: environment variable SLUICE_TEST_UNSET is not set (write ${SLUICE_TEST_UNSET:-default} to make it optional) (line 1)")
	require.ErrorContains(t, f.Unresolved("types"), "sluice.yaml: types.hook.http.headers.X-Key: environment variable SLUICE_TEST_UNSET3 is not set")
	require.NoError(t, f.Unresolved("schedules"))
	// Not a secret: the database URL and every other value fail at once.
	requireRejected(t, `db: "mysql://u:${SLUICE_TEST_UNSET}@h/db"`, "db", "SLUICE_TEST_UNSET is not set")
}

// requireRejected checks that yaml fails with an *Error naming the file,
// the key path and the problem.
func requireRejected(t *testing.T, yaml, path, msg string) {
	t.Helper()
	_, err := config.Parse("sluice.yaml", []byte(yaml))
	require.Error(t, err, "accepted:\n%s", yaml)
	var ce *config.Error
	require.True(t, errors.As(err, &ce), "not a *config.Error: %v", err)
	require.Equal(t, "sluice.yaml", ce.File)
	require.Equal(t, path, ce.Path, "%v", err)
	require.Contains(t, err.Error(), "sluice.yaml: "+path+": ")
	require.Contains(t, err.Error(), msg)
	require.NotContains(t, err.Error(), "\n", "an error is one line")
}

func TestRejectUnknownKey(t *testing.T) {
	requireRejected(t, "databse: sqlite:x.db", "databse", "unknown key")
	requireRejected(t, "types:\n  report:\n    comand: [php]", "types.report.comand", "unknown key (known keys here: queue, http, command,")
	requireRejected(t, "types:\n  r:\n    http: { url: 'http://h', retries: 3 }", "types.r.http.retries", "unknown key")
	requireRejected(t, "queues: { default: { workers: 3 } }", "queues.default.workers", "unknown key")
	requireRejected(t, "auth: { token: x }", "auth.token", "unknown key")
	// A schedule's jobs are keyed sched:<name>:<slot>, so that a slot fires once;
	// there is no key to set.
	requireRejected(t, "types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, key: mine } }", "schedules.s.key", "unknown key")
	requireRejected(t, "types: { x: { command: [x], backoff: { min: 1s } } }", "types.x.backoff.min", "unknown key")
}

func TestRejectBadDuration(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    command: [php]\n    timeout: 10 minutes", "types.report.timeout",
		`invalid duration "10 minutes"`)
	requireRejected(t, "retention: { failed: forever }", "retention.failed", `invalid duration "forever"`)
	requireRejected(t, "types: { x: { command: [x], lease: 0s } }", "types.x.lease", "must be positive")
	requireRejected(t, "types: { x: { command: [x], timeout: -1s } }", "types.x.timeout", "must not be negative")
	requireRejected(t, "types: { x: { command: [x], backoff: { base: 2h } } }", "types.x.backoff", "base 2h0m0s is longer than max 1h0m0s")
}

func TestRejectTypeWithoutHandler(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    timeout: 1m", "types.report", "no handler")
	requireRejected(t, "types:\n  report:", "types.report", "no handler")
}

func TestRejectTypeWithTwoHandlers(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    command: [php]\n    http: { url: 'http://h' }", "types.report",
		"both http and command are set")
}

func TestRejectCommandString(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    command: php think report:build", "types.report.command",
		`must be an argv list such as ["php", "think", "report:build"], not a string`)
	requireRejected(t, "types:\n  report:\n    command: 'php think | tee log'", "types.report.command",
		`such as ["sh", "-c", "php think | tee log"]`)
	requireRejected(t, "types:\n  report:\n    command: { php: think }", "types.report.command", "want a list, got a mapping")
}

func TestRejectEmptyArgv(t *testing.T) {
	requireRejected(t, "types:\n  report:\n    command: []", "types.report.command", "empty argv")
	requireRejected(t, "types:\n  report:\n    command: ['', x]", "types.report.command[0]", "empty program name")
}

func TestRejectBadURL(t *testing.T) {
	for _, url := range []string{"/jobs/x", "ftp://h/x", "http://", "127.0.0.1:9000/x", "http://h/%zz"} {
		requireRejected(t, "types:\n  x:\n    http: { url: '"+url+"' }", "types.x.http.url", "invalid URL")
	}
	requireRejected(t, "types:\n  x:\n    http: { timeout: 1s }", "types.x.http.url", "required")

	t.Setenv("HOOK_PASS", "hunter2")
	_, err := config.Parse("sluice.yaml", []byte("types:\n  x:\n    http: { url: 'ftp://hook:${HOOK_PASS}@h/x' }"))
	require.ErrorContains(t, err, `types.x.http.url: invalid URL "ftp://hook:xxxxx@h/x"`, "a password stays out of errors")
}

func TestRejectBadCron(t *testing.T) {
	base := "types: { x: { command: [x] } }\nschedules:\n  s: { type: x, cron: "
	requireRejected(t, base+"'61 * * * *' }", "schedules.s.cron", `invalid cron expression "61 * * * *"`)
	requireRejected(t, base+"'* * *' }", "schedules.s.cron", "invalid cron expression")
	requireRejected(t, base+"'@sometimes' }", "schedules.s.cron", "invalid cron expression")
	requireRejected(t, base+"'TZ=UTC' }", "schedules.s.cron", "set the time zone with timezone:")
	requireRejected(t, "types: { x: { command: [x] } }\nschedules: { s: { type: x } }", "schedules.s.cron", "required")
}

func TestRejectUnknownTimezone(t *testing.T) {
	requireRejected(t, "types: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, timezone: Mars/Olympus } }",
		"schedules.s.timezone", `unknown time zone "Mars/Olympus"`)
}

func TestRejectBadRate(t *testing.T) {
	for _, rate := range []string{"5", "5/x", "0/s", "-1/s", "five/s", "5/0s"} {
		requireRejected(t, "queues: { mail: { rate: '"+rate+"' } }", "queues.mail.rate", "invalid rate")
	}
}

func TestRejectConcurrencyBelowOne(t *testing.T) {
	requireRejected(t, "queues: { default: { concurrency: 0 } }", "queues.default.concurrency", "must be at least 1, got 0")
	requireRejected(t, "queues: { default: { concurrency: -2 } }", "queues.default.concurrency", "must be at least 1")
	requireRejected(t, "queues: { default: { concurrency: lots } }", "queues.default.concurrency", `want an integer, got "lots"`)
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

func TestRejectScheduleOfUndefinedType(t *testing.T) {
	requireRejected(t, "schedules:\n  close: { cron: '*/5 * * * *', type: order_scan }", "schedules.close.type",
		`type "order_scan" is not defined under types`)
}

func TestRejectUndefinedQueue(t *testing.T) {
	requireRejected(t, "queues: { default: {} }\ntypes: { x: { command: [x], queue: mail } }", "types.x.queue",
		`queue "mail" is not defined under queues (defined: default)`)
	requireRejected(t, "queues: { mail: {} }\ntypes: { x: { command: [x] } }", "types.x.queue", `queue "default" is not defined`)
	requireRejected(t, "queues: { default: {} }\ntypes: { x: { command: [x] } }\nschedules: { s: { cron: '@daily', type: x, queue: bulk } }",
		"schedules.s.queue", `queue "bulk" is not defined`)
}

func TestRejectBadListen(t *testing.T) {
	for _, addr := range []string{"localhost", "8080", "127.0.0.1:http", "127.0.0.1:70000", "[::1"} {
		requireRejected(t, "listen: '"+addr+"'", "listen", "invalid")
	}
}

func TestRejectBadCIDR(t *testing.T) {
	requireRejected(t, "auth: { allow_cidrs: ['10.0.0.0/8', '192.168.1.1'] }", "auth.allow_cidrs[1]", `invalid CIDR "192.168.1.1"`)
	requireRejected(t, "auth: { allow_cidrs: ['10.0.0.0/33'] }", "auth.allow_cidrs[0]", "invalid CIDR")
}

func TestServerAccessKeys(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("auth:\n  allowed_hosts: [sluice.internal]\n  trusted_proxies: ['10.0.0.5/32', '10.1.0.0/16']\n  public_url: https://sluice.example.com\n"))
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

func TestRejectMalformedYAML(t *testing.T) {
	_, err := config.Parse("sluice.yaml", []byte("types:\n  x: [\n"))
	require.ErrorContains(t, err, "sluice.yaml: line ")
	_, err = config.Parse("sluice.yaml", []byte("db: a\n---\ndb: b\n"))
	require.ErrorContains(t, err, "sluice.yaml: more than one YAML document")
	_, err = config.Parse("sluice.yaml", []byte("- a\n- b\n"))
	require.ErrorContains(t, err, "sluice.yaml: want a mapping, got a list")
}

func TestErrorLine(t *testing.T) {
	_, err := config.Parse("sluice.yaml", []byte("queues:\n  default: {}\ntypes:\n  report:\n    command: [php]\n    timeout: soon\n"))
	var ce *config.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 6, ce.Line)
	require.Equal(t, `sluice.yaml: types.report.timeout: invalid duration "soon": use a number with a unit: ms, s, m, h, d or w (line 6)`,
		err.Error())
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
types:
  a: &hook
    http: { url: "http://h/a", timeout: 5s }
    max_attempts: 3
  b:
    <<: *hook
    max_attempts: 7
`))
	require.NoError(t, err)
	require.Equal(t, 3, f.Types["a"].MaxAttempts)
	require.Equal(t, 7, f.Types["b"].MaxAttempts, "the mapping's own key wins")
	require.Equal(t, "http://h/a", f.Types["b"].HTTP.URL)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte("types:\n  x: { command: [x], timeout: 1 minute }\n"), 0o600))
	_, err := config.Load(path)
	require.ErrorContains(t, err, path+": types.x.timeout: invalid duration")

	require.NoError(t, os.WriteFile(path, []byte("listen: ':8080'\n"), 0o600))
	f, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, ":8080", f.Listen)

	_, err = config.Load(filepath.Join(dir, "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestTracingAndHistory(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
history: { keep: 5 }
tracing:
  endpoint: https://otel.example:4318
  service_name: jobs
  sampling: 0.25
  headers: { api-key: "k" }
`))
	require.NoError(t, err)
	require.Equal(t, config.History{Keep: 5}, f.History)
	require.Equal(t, config.Tracing{Endpoint: "https://otel.example:4318", Protocol: config.ProtocolHTTP, ServiceName: "jobs",
		Sampling: 0.25, Headers: map[string]string{"api-key": "k"}}, f.Tracing)
}

func TestFairQueueAndCaps(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte(`
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
		PartitionMaxRunning: map[string]int{"premium-co": 10}}, q.SluiceQueue())
	types, err := f.SluiceTypes()
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
	f, err := config.Parse("sluice.yaml", []byte(`
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
	require.Equal(t, sluice.QueueConfig{Concurrency: sluice.DefaultConcurrency, Fair: true, ClusterRatePerPartition: 5,
		ClusterBurstPerPartition: 2, PartitionClusterRate: map[string]float64{"premium-co": 50}}, f.Queues["tenants"].SluiceQueue())
	types, err := f.SluiceTypes()
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
