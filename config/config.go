// Package config reads sluice.yaml, the config file docs/reference.md "Config file" describes.
//
// Validation is strict: an unknown key, a bad value or a reference to
// something undefined rejects the whole file, with an *Error that names the
// file, the key path and the problem, such as
//
//	sluice.yaml: types.report.timeout: invalid duration "10 minutes" (line 14)
//
// Values are returned already parsed (durations as time.Duration, CIDRs as
// netip.Prefix, payloads as JSON) with defaults filled in.
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

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// File is a parsed and validated config file. Defaults are filled in.
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
}

// History configures each job's attempt history.
type History struct {
	Keep int `yaml:"keep"` // attempts kept per job, the latest; default driver.DefaultKeepAttempts
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
	Tokens     []string       `yaml:"tokens"`      // accepted bearer tokens; none means no auth
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

// Queue configures the workers of one queue.
type Queue struct {
	Concurrency int  `yaml:"concurrency"` // default sluice.DefaultConcurrency
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
	Queue   string `yaml:"queue"` // default sluice.DefaultQueue
	HTTP    *HTTP  `yaml:"http"`
	Command Argv   `yaml:"command"`
	// Timeout bounds each run; zero means no bound beyond the webhook's
	// own timeout.
	Timeout     time.Duration `yaml:"timeout"`
	Lease       time.Duration `yaml:"lease"`        // default sluice.DefaultLease
	MaxAttempts int           `yaml:"max_attempts"` // default sluice.DefaultMaxAttempts
	Backoff     Backoff       `yaml:"backoff"`
	Dedupe      string        `yaml:"dedupe"` // "permanent" (default) or "active"
	// MaxRunning caps the type's running jobs over every process; 0: none.
	MaxRunning int `yaml:"max_running"`
	// ClusterRate caps the type's job starts over every process and
	// queue, as sluice.Type.ClusterRate; ClusterBurst is its bucket size.
	ClusterRate  Rate `yaml:"cluster_rate"`
	ClusterBurst int  `yaml:"cluster_burst"` // default: a tenth of a second's worth, at least 1
	// PermanentExitCodes fail a command's job at once. Command types
	// default to [65]; an explicit [] makes every failing exit transient.
	PermanentExitCodes []int `yaml:"permanent_exit_codes"`
	// Circuit is the type's circuit breaker, as sluice.Circuit; threshold
	// 0 (the default) means none.
	Circuit Circuit `yaml:"circuit"`
}

// Circuit is a type's circuit breaker, as sluice.Circuit.
type Circuit struct {
	Threshold   int           `yaml:"threshold"`    // consecutive transient failures that open it
	Cooldown    time.Duration `yaml:"cooldown"`     // default sluice.DefaultCircuitCooldown
	MaxCooldown time.Duration `yaml:"max_cooldown"` // default sluice.DefaultCircuitMaxCooldown
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
	Base time.Duration `yaml:"base"` // default sluice.DefaultBackoffBase
	Max  time.Duration `yaml:"max"`  // default sluice.DefaultBackoffMax
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
	Overlap  string          `yaml:"overlap"`  // sluice.OverlapForbid or OverlapAllow; default sluice.DefaultOverlap
	CatchUp  int             `yaml:"catch_up"` // missed slots to run after downtime
}

// Retention is how long finished jobs are kept, per status.
type Retention struct {
	Success   time.Duration `yaml:"success"`   // default sluice.DefaultRetentionSuccess
	Failed    time.Duration `yaml:"failed"`    // default sluice.DefaultRetentionFailed
	Cancelled time.Duration `yaml:"cancelled"` // default sluice.DefaultRetentionCancelled
}

// Map returns the retention keyed by job status, as sluice.Config.Retention takes it.
func (r Retention) Map() map[sluicetype.Status]time.Duration {
	return map[sluicetype.Status]time.Duration{
		sluicetype.StatusSuccess: r.Success, sluicetype.StatusFailed: r.Failed, sluicetype.StatusCancelled: r.Cancelled,
	}
}

// What the file leaves out gets the library's defaults, so that a job
// type behaves the same whether it is configured in Go or in YAML.
func (f *File) setDefaults() {
	f.Retention = Retention{
		Success:   sluice.DefaultRetentionSuccess,
		Failed:    sluice.DefaultRetentionFailed,
		Cancelled: sluice.DefaultRetentionCancelled,
	}
	f.History.Keep = driver.DefaultKeepAttempts
	f.Tracing = Tracing{Protocol: ProtocolHTTP, ServiceName: "sluice", Sampling: 1}
}

func (q *Queue) setDefaults() { q.Concurrency = sluice.DefaultConcurrency }

func (t *Type) setDefaults() {
	t.Queue = sluice.DefaultQueue
	t.Lease = sluice.DefaultLease
	t.MaxAttempts = sluice.DefaultMaxAttempts
	t.Backoff = Backoff{Base: sluice.DefaultBackoffBase, Max: sluice.DefaultBackoffMax}
	t.Dedupe = sluicetype.DedupePermanent
	t.Circuit = Circuit{Cooldown: sluice.DefaultCircuitCooldown, MaxCooldown: sluice.DefaultCircuitMaxCooldown}
}

func (s *Schedule) setDefaults() {
	s.Timezone = "UTC"
	s.Overlap = sluice.DefaultOverlap
}

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
	return f, nil
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
