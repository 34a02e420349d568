// Package config reads sluice.yaml, the config file docs/reference.md "Config file" describes.
//
// Validation is strict: an unknown key, a bad value or a reference to
// something undefined rejects the whole file, with an *Error that names the
// file, the key path and the problem, such as
//
//	sluice.yaml: types.report.timeout: invalid duration "10 minutes" (line 14)
//
// Values are returned already parsed (durations as time.Duration, CIDRs as
// netip.Prefix, payloads as JSON). A setting the file leaves out stays
// zero, which the library reads as its default (sluice.Type.WithDefaults),
// so that a job type behaves the same whether it is configured in Go or in
// YAML; only the file's own settings (tracing, a schedule's time zone) get
// their defaults here.
//
// The package checks what the file alone decides: syntax, types, ranges
// and references between sections. The rules of the packages a file
// describes (names, webhook URLs, batch SQL, the library's limits) are
// checked where the program is assembled, which reports them at the
// file's key with ErrorAt; package config imports none of those packages.
//
// # Environment variables
//
// ${VAR} and ${VAR:-default} are replaced with the environment's values.
// ${VAR:-default} uses the default when VAR is unset or empty, as a shell
// does; an unset VAR without a default is an error that names it. $${ gives
// a literal ${.
//
// Expansion happens inside scalar values, after the YAML is parsed, not on
// the file's text. A value therefore cannot change the document's
// structure: a secret holding a quote, a newline, "#" or ": " stays one
// string, where text expansion would let it end the string and add keys.
// A ${VAR} in a comment is left alone, and one in a key is rejected:
// names of queues, types and schedules are not expanded.
//
// Inside {...} or [...] YAML needs the reference quoted: "${VAR}". A key
// that takes a number or a boolean reads the expanded text as one, quoted
// or not, so concurrency: "${WORKERS}" works. In a payload, where nothing
// says what type a value has, an unquoted ${N} is typed after expansion
// (a number here) and a quoted "${N}" stays a string.
package config

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"
)

// File is a parsed and validated config file.
type File struct {
	DB string `yaml:"db"` // database URL; empty means the CLI's default
	// ListenDB is a direct postgres:// URL to DB's database for the LISTEN
	// connection, for a DB behind a transaction pooler (?pooler=transaction),
	// which cannot pass notifications. It needs DB set in the same file.
	ListenDB  string              `yaml:"listen_db"`
	Listen    string              `yaml:"listen"` // host:port of the HTTP server; empty means the CLI's default
	Auth      Auth                `yaml:"auth"`
	Queues    map[string]Queue    `yaml:"queues"`
	Types     map[string]Type     `yaml:"types"`
	Schedules map[string]Schedule `yaml:"schedules"`
	Batches   map[string]Batch    `yaml:"batches"`
	Retention Retention           `yaml:"retention"`
	History   History             `yaml:"history"`
	Tracing   Tracing             `yaml:"tracing"`

	unresolved map[string]error // see Unresolved
	name       string           // as given to Parse or Load, for ErrorAt
	lines      map[string]int   // the line of every key path set, for ErrorAt
}

// History configures each job's attempt history.
type History struct {
	Keep int `yaml:"keep"` // attempts kept per job, the latest; 0: the library's default (20)
}

// Tracing configures the OTLP export of sluice's spans. With no Endpoint
// nothing is exported: spans go to OpenTelemetry's no-op provider, and
// only the trace context that callers send is passed on.
type Tracing struct {
	Endpoint string `yaml:"endpoint"` // OTLP/HTTP base URL, such as http://otel-collector:4318
	// Protocol is the OTLP transport; only ProtocolHTTP is built in.
	Protocol    string            `yaml:"protocol"`
	ServiceName string            `yaml:"service_name"` // default "sluice"
	Sampling    float64           `yaml:"sampling"`     // share of new traces kept, 0 to 1; default 1
	Headers     map[string]string `yaml:"headers"`      // sent with every export, such as an API key
}

// ProtocolHTTP is OTLP over HTTP with protobuf bodies, the one tracing
// protocol the binary supports.
const ProtocolHTTP = "http/protobuf"

// Auth guards the HTTP API and the dashboard.
type Auth struct {
	Tokens     []Token        `yaml:"tokens"`      // accepted bearer tokens; none means no auth
	AllowCIDRs []netip.Prefix `yaml:"allow_cidrs"` // client allowlist; empty allows every address
	QueryToken bool           `yaml:"query_token"` // also accept ?token=
	// AllowedHosts are host names the server answers to besides IP
	// literals, localhost and listen's host; others get 421.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TrustedProxies are reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed.
	TrustedProxies []netip.Prefix `yaml:"trusted_proxies"`
	// PublicURL is the address browsers use; an https one makes the
	// session cookie Secure, and its host is allowed.
	PublicURL string `yaml:"public_url"`
}

// Token is one entry of auth.tokens: a mapping with its name, value and
// scope, or, as before scopes existed, a plain string, which works as
// scope admin (Plain) and is warned about at start.
type Token struct {
	Name  string `yaml:"name"`  // shown in logs and 403 answers instead of the value
	Token string `yaml:"token"` // the secret, usually ${VAR}
	Scope string `yaml:"scope"` // one of sluicetype.Scopes
	// Types and Queues limit an enqueue token to these job types and
	// queues; empty allows any.
	Types  []string `yaml:"types"`
	Queues []string `yaml:"queues"`
	// Plain is true for an entry written as a bare string.
	Plain bool `yaml:"-"`
}

// Queue configures the workers of one queue.
type Queue struct {
	Concurrency int  `yaml:"concurrency"` // 0: sluice.DefaultConcurrency
	Rate        Rate `yaml:"rate"`        // per process; zero means no limit
	// ClusterRate caps the queue's job starts on all nodes together, as
	// sluice.QueueConfig.ClusterRate; ClusterBurst is its bucket size.
	ClusterRate  Rate `yaml:"cluster_rate"`
	ClusterBurst int  `yaml:"cluster_burst"` // default: a tenth of a second's worth, at least 1
	Paused       bool `yaml:"paused"`
	// Fair and the running caps are sluice.QueueConfig's.
	Fair                   bool           `yaml:"fair"`
	MaxRunning             int            `yaml:"max_running"`
	MaxRunningPerPartition int            `yaml:"max_running_per_partition"`
	PartitionMaxRunning    map[string]int `yaml:"partition_max_running"`
	// The per-partition start rates are sluice.QueueConfig's
	// ClusterRatePerPartition, ClusterBurstPerPartition and
	// PartitionClusterRate (overrides by partition).
	ClusterRatePerPartition  Rate            `yaml:"cluster_rate_per_partition"`
	ClusterBurstPerPartition int             `yaml:"cluster_burst_per_partition"`
	PartitionClusterRate     map[string]Rate `yaml:"partition_cluster_rate"`
}

// Rate is a limit of N jobs per period, written "5/s", "100/m", "1000/h"
// or with any duration as the period, such as "10/30s".
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r sets no limit.
func (r Rate) IsZero() bool { return r.N == 0 }

// PerSecond is r in jobs per second, 0 for no limit.
func (r Rate) PerSecond() float64 {
	if r.IsZero() {
		return 0
	}
	return float64(r.N) / r.Per.Seconds()
}

// Type configures one job type. Exactly one of HTTP and Command is set.
type Type struct {
	Queue   string `yaml:"queue"` // empty: sluice.DefaultQueue
	HTTP    *HTTP  `yaml:"http"`
	Command Argv   `yaml:"command"`
	// Timeout bounds each run; zero means no bound beyond the webhook's
	// own timeout.
	Timeout time.Duration `yaml:"timeout"`
	Lease   time.Duration `yaml:"lease"` // 0: sluice.DefaultLease
	// Deadline is how long after a job becomes due it may still start,
	// as sluice.Type.Deadline; zero means no deadline.
	Deadline time.Duration `yaml:"deadline"`
	// ProgressTimeout is how long a running job of the type may report
	// no progress before it is stuck, as sluice.Type.ProgressTimeout;
	// zero means none. OnStuck is what becomes of a stuck job: "retry"
	// (empty: the default) or "cancel".
	ProgressTimeout time.Duration `yaml:"progress_timeout"`
	OnStuck         string        `yaml:"on_stuck"`
	MaxAttempts     int           `yaml:"max_attempts"` // 0: sluice.DefaultMaxAttempts
	Backoff         Backoff       `yaml:"backoff"`
	Dedupe          string        `yaml:"dedupe"` // "permanent" (empty: the default) or "active"
	// MaxRunning caps the type's running jobs over every process; 0: none.
	MaxRunning int `yaml:"max_running"`
	// ClusterRate caps the type's job starts over every process and
	// queue, as sluice.Type.ClusterRate; ClusterBurst is its bucket size.
	ClusterRate  Rate `yaml:"cluster_rate"`
	ClusterBurst int  `yaml:"cluster_burst"` // default: a tenth of a second's worth, at least 1
	// PermanentExitCodes fail a command's job at once. Nil means the
	// command handler's default, [65]; an explicit [] makes every failing
	// exit transient.
	PermanentExitCodes []int `yaml:"permanent_exit_codes"`
	// KillGrace is how long a stopped command (cancelled, timed out, shut
	// down) has between SIGTERM and SIGKILL; zero means the most,
	// sluicetype.MaxKillGrace.
	KillGrace time.Duration `yaml:"kill_grace"`
	// Env is a command's environment besides the few variables it
	// inherits of sluice's (command.BaseEnv) and the job's own: pass a
	// secret on as KEY: "${VAR}".
	Env map[string]string `yaml:"env"`
	// Circuit is the type's circuit breaker, as sluice.Circuit; threshold
	// 0 (the default) means none.
	Circuit Circuit `yaml:"circuit"`
}

// Circuit is a type's circuit breaker, as sluice.Circuit.
type Circuit struct {
	Threshold   int           `yaml:"threshold"`    // consecutive transient failures that open it
	Cooldown    time.Duration `yaml:"cooldown"`     // 0: sluice.DefaultCircuitCooldown
	MaxCooldown time.Duration `yaml:"max_cooldown"` // 0: sluice.DefaultCircuitMaxCooldown, or Cooldown if longer
}

// HTTP is a webhook handler.
type HTTP struct {
	URL string `yaml:"url"` // absolute http or https URL
	// Timeout bounds one request; zero falls back to the type's timeout,
	// then to webhook.DefaultTimeout.
	Timeout time.Duration     `yaml:"timeout"`
	Secret  string            `yaml:"secret"` // signs requests when set
	Headers map[string]string `yaml:"headers"`
}

// Argv is a command and its arguments, run without a shell.
type Argv []string

// Backoff is a type's retry delay policy, as sluice.Backoff.
type Backoff struct {
	Base time.Duration `yaml:"base"` // 0: sluice.DefaultBackoffBase
	Max  time.Duration `yaml:"max"`  // 0: sluice.DefaultBackoffMax
}

// Schedule enqueues a job on a cron schedule.
type Schedule struct {
	// Cron is five fields, or six with seconds first, or a descriptor
	// such as @hourly or @every 30s; cron.Parse reads it.
	Cron string `yaml:"cron"`
	// Timezone is an IANA name; default "UTC", so that every node
	// computes the same slots whatever its local time zone.
	Timezone string          `yaml:"timezone"`
	Location *time.Location  `yaml:"-"` // Timezone, loaded
	Type     string          `yaml:"type"`
	Payload  json.RawMessage `yaml:"payload"`  // a YAML mapping, as JSON; nil when absent
	Queue    string          `yaml:"queue"`    // empty means the type's queue
	Overlap  string          `yaml:"overlap"`  // sluice.OverlapForbid or OverlapAllow; empty: sluice.DefaultOverlap
	CatchUp  int             `yaml:"catch_up"` // missed slots to run after downtime
}

// Retention is how long finished jobs are kept, per status, and audit
// entries; 0 is the library's default (sluice.DefaultRetentionSuccess
// and its neighbours, sluice.DefaultAuditRetention).
type Retention struct {
	Success   time.Duration `yaml:"success"`
	Failed    time.Duration `yaml:"failed"`
	Cancelled time.Duration `yaml:"cancelled"`
	Audit     time.Duration `yaml:"audit"`
}

// The file's own defaults: what no library package has a default for.
func (f *File) setDefaults() {
	f.Tracing = Tracing{Protocol: ProtocolHTTP, ServiceName: "sluice", Sampling: 1}
}

// Every node computes the same slots whatever its local time zone.
func (s *Schedule) setDefaults() { s.Timezone = "UTC" }

// Error is a problem in a config file.
type Error struct {
	File string // the name given to Parse, or the path given to Load
	Path string // dotted key path, such as "types.report.timeout"; empty for the whole file
	Line int    // 1-based; 0 when unknown
	Err  error
}

func (e *Error) Error() string {
	s := e.File + ": "
	if e.Path != "" {
		s += e.Path + ": "
	}
	s += e.Err.Error()
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads and validates the config file at path. Problems in the
// file are *Error values that name path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse reads and validates a config file's content. name appears in
// errors as the file's name.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{file: name, lines: map[string]int{}, unresolved: map[string]error{}}
	f, err := d.decodeFile(data)
	if err != nil {
		return nil, err
	}
	if err := d.validate(f); err != nil {
		return nil, err
	}
	if len(d.unresolved) > 0 {
		f.unresolved = d.unresolved
	}
	f.name, f.lines = name, d.lines
	return f, nil
}

// ErrorAt is err as an *Error at the key path of the file, such as
// "types.report.http.url", at the line of path or, for a key the file
// leaves out, of its nearest ancestor. The checks of the packages a file
// describes, made where the program is assembled, report through it.
func (f *File) ErrorAt(path string, err error) error {
	return &Error{File: f.name, Path: path, Line: lineOf(f.lines, path), Err: err}
}

// IsSet reports whether the key path was written in the file.
func (f *File) IsSet(path string) bool {
	_, ok := f.lines[path]
	return ok
}

// Unresolved is the error of the first secret (an auth token, a webhook's
// secret or header) under one of the key paths given ("auth", "types")
// whose environment variable is unset, or nil. A command checks the
// sections it uses: a secret is resolved only where it is used.
func (f *File) Unresolved(under ...string) error {
	for _, path := range sortedKeys(f.unresolved) {
		for _, u := range under {
			if path == u || strings.HasPrefix(path, u+".") {
				return f.unresolved[path]
			}
		}
	}
	return nil
}
