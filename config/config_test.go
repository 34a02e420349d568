package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/config"
)

const day = 24 * time.Hour

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
	require.Zero(t, f.Retention.Failed, "an unset key stays zero: the library's default")
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
	t.Setenv("SHORT", "t0k")
	for _, tc := range []struct{ yaml, path, msg string }{
		{`listen: "${SLUICE_TEST_UNSET}"`, "listen", "environment variable SLUICE_TEST_UNSET is not set"},
		{`listen: "${SLUICE_TEST_UNSET"`, "listen", "unterminated ${"},
		{`listen: "${1BAD}"`, "listen", "bad reference ${1BAD}"},
		{`auth: { tokens: ["${EMPTY}"] }`, "auth.tokens[0]", "empty token"},
		{`auth: { tokens: ["${SHORT}"] }`, "auth.tokens[0]", "token too weak"},
		{"auth:\n  tokens:\n    - " + strings.Repeat("ab12", 8) + "\n    - secret", "auth.tokens[1]", "sluice token new"},
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

func TestRejectScheduleOfUndefinedType(t *testing.T) {
	requireRejected(t, "schedules:\n  close: { cron: '*/5 * * * *', type: order_scan }", "schedules.close.type",
		`type "order_scan" is not defined under types`)
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

// A command's env: names a variable and its value, which may come from
// sluice's environment like a secret (resolved only where handlers run);
// bad names, sluice's own job variables and env on a webhook are refused.
func TestCommandEnv(t *testing.T) {
	t.Setenv("SLUICE_TEST_APP_KEY", "k-1")
	f, err := config.Parse("sluice.yaml", []byte(`types:
  report: { command: [php, report.php], env: { APP_KEY: "${SLUICE_TEST_APP_KEY}", APP_ENV: production, LATER: "${SLUICE_TEST_UNSET}" } }
`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"APP_KEY": "k-1", "APP_ENV": "production", "LATER": ""}, f.Types["report"].Env)
	require.ErrorContains(t, f.Unresolved("types"), "types.report.env.LATER: environment variable SLUICE_TEST_UNSET is not set")
	requireRejected(t, "types: { x: { command: [x], env: { 1X: a } } }", "types.x.env.1X", "not a variable name")
	requireRejected(t, "types: { x: { command: [x], env: { A-B: a } } }", "types.x.env.A-B", "not a variable name")
	requireRejected(t, "types: { x: { command: [x], env: { SLUICE_JOB_ID: a } } }", "types.x.env.SLUICE_JOB_ID", "sluice's own")
	requireRejected(t, "types: { x: { command: [x], env: { SLUICE_ANYTHING: a } } }", "types.x.env.SLUICE_ANYTHING", "sluice's own")
	requireRejected(t, "types: { x: { http: { url: 'http://h' }, env: { A: a } } }", "types.x.env", "only applies to command handlers")
}

func TestKillGrace(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("types: { x: { command: [x], kill_grace: 2s } }\n"))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, f.Types["x"].KillGrace)
	requireRejected(t, "types: { x: { command: [x], kill_grace: 11s } }", "types.x.kill_grace", "at most 10s")
	requireRejected(t, "types: { x: { command: [x], kill_grace: 0s } }", "types.x.kill_grace", "want more than 0")
	requireRejected(t, "types: { x: { http: { url: 'http://h' }, kill_grace: 1s } }", "types.x.kill_grace", "only applies to command handlers")
}

func TestAuditRetention(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("retention: { audit: 180d }\n"))
	require.NoError(t, err)
	require.Equal(t, 180*day, f.Retention.Audit)
	requireRejected(t, "retention: { audit: 0s }", "retention.audit", "must be positive")
	requireRejected(t, "retention: { audit: -24h }", "retention.audit", "must be positive")
}

// TestTypeDeadline: a type's deadline is a positive duration; left out,
// its jobs have none.
func TestTypeDeadline(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("types:\n  x: { command: [x], deadline: 15m }\n  y: { command: [y] }\n"))
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, f.Types["x"].Deadline)
	require.Zero(t, f.Types["y"].Deadline)
	requireRejected(t, "types:\n  x: { command: [x], deadline: 0s }", "types.x.deadline", "must be positive, got 0s")
	requireRejected(t, "types:\n  x: { command: [x], deadline: -1m }", "types.x.deadline", "must be positive")
	requireRejected(t, "types:\n  x: { command: [x], deadline: soon }", "types.x.deadline", "invalid duration")
}

// TestTypeProgressTimeout: a type's progress_timeout is a positive
// duration and on_stuck retry or cancel; left out, none and retry.
func TestTypeProgressTimeout(t *testing.T) {
	f, err := config.Parse("sluice.yaml", []byte("types:\n  x: { command: [x], progress_timeout: 5m, on_stuck: cancel }\n  y: { command: [y], progress_timeout: 30s, on_stuck: retry }\n  z: { command: [z] }\n"))
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, f.Types["x"].ProgressTimeout)
	require.Equal(t, "cancel", f.Types["x"].OnStuck)
	require.Equal(t, "retry", f.Types["y"].OnStuck)
	require.Zero(t, f.Types["z"].ProgressTimeout)
	requireRejected(t, "types:\n  x: { command: [x], progress_timeout: 0s }", "types.x.progress_timeout", "must be positive, got 0s")
	requireRejected(t, "types:\n  x: { command: [x], progress_timeout: -1m }", "types.x.progress_timeout", "must be positive")
	requireRejected(t, "types:\n  x: { command: [x], progress_timeout: soon }", "types.x.progress_timeout", "invalid duration")
	requireRejected(t, "types:\n  x: { command: [x], progress_timeout: 1m, on_stuck: kill }", "types.x.on_stuck", `"kill": want retry or cancel`)
}
