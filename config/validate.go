package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/authtoken"
	"github.com/sluicehq/sluice/sluicetype"
)

// fail reports a problem found after decoding, at the line of path or of
// its nearest ancestor in the file (a defaulted value has no line).
func (d *decoder) fail(path string, err error) error {
	return d.wrap(path, lineOf(d.lines, path), err)
}

// lineOf is the line of path in the file or, for a path the file leaves
// out (a defaulted value), of its nearest ancestor; 0 when none is set.
func lineOf(lines map[string]int, path string) int {
	for p := path; p != ""; {
		if line, ok := lines[p]; ok {
			return line
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func (d *decoder) failf(path, format string, args ...any) error {
	return d.fail(path, fmt.Errorf(format, args...))
}

// set reports whether path was written in the file.
func (d *decoder) set(path string) bool {
	_, ok := d.lines[path]
	return ok
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// validateTokens checks auth.tokens: each value strong enough (unless its
// variable is unset, which only the commands that serve report), each
// mapping with a unique name and a known scope, and types and queues only
// where they mean something, on an enqueue token.
func (d *decoder) validateTokens(tokens []Token) error {
	names := map[string]int{}
	values := map[string]int{}
	for i, tok := range tokens {
		path := fmt.Sprintf("auth.tokens[%d]", i)
		valuePath := path
		if !tok.Plain {
			valuePath = path + ".token"
		}
		if _, later := d.unresolved[valuePath]; tok.Token == "" && !later {
			return d.failf(valuePath, "empty token (is its environment variable set?)")
		}
		if tok.Token != "" {
			if err := authtoken.Check(tok.Token); err != nil {
				return d.fail(valuePath, err)
			}
			// One value under two scopes would be matched as either.
			if first, dup := values[tok.Token]; dup {
				return d.failf(valuePath, "the same value as auth.tokens[%d]; each token needs its own", first)
			}
			values[tok.Token] = i
		}
		if tok.Plain {
			continue
		}
		if tok.Name == "" {
			return d.failf(path+".name", "required: a name for logs and refusals, such as grafana (the token's value is never shown)")
		}
		if first, dup := names[tok.Name]; dup {
			return d.failf(path+".name", "%q is also the name of auth.tokens[%d]; names must be unique", tok.Name, first)
		}
		names[tok.Name] = i
		if !sluicetype.Scope(tok.Scope).Valid() {
			if tok.Scope == "" {
				return d.failf(path+".scope", "required: one of %s", sluicetype.ScopeNames())
			}
			return d.failf(path+".scope", "%q is not one of %s", tok.Scope, sluicetype.ScopeNames())
		}
		for _, key := range []string{"types", "queues"} {
			list := tok.Types
			if key == "queues" {
				list = tok.Queues
			}
			if len(list) > 0 && tok.Scope != "enqueue" {
				return d.failf(path+"."+key, "only an enqueue token can be limited to %s (this one is scope %s)", key, tok.Scope)
			}
			for j, v := range list {
				if v == "" {
					return d.failf(fmt.Sprintf("%s.%s[%d]", path, key, j), "empty name")
				}
			}
		}
	}
	return nil
}

// validate checks what decoding could not: ranges, formats and references
// between sections. Names are visited in sorted order so that a file with
// several problems always reports the same one. A value the file leaves
// out is the library's default, which is valid: only what it sets is
// checked.
func (d *decoder) validate(f *File) error {
	if f.DB != "" {
		if _, err := dburl.Scheme(f.DB); err != nil {
			return d.fail("db", err)
		}
	}
	if f.ListenDB != "" {
		if s, err := dburl.Scheme(f.ListenDB); err != nil || s != "postgres" {
			return d.failf("listen_db", "want a direct postgres://USER:PASS@HOST:PORT/DB URL to the database of db:")
		}
		if s, _ := dburl.Scheme(f.DB); s != "postgres" {
			return d.failf("listen_db", "needs db: in the same file to be a postgres:// URL")
		}
	}
	if f.Listen != "" {
		if err := CheckListen(f.Listen); err != nil {
			return d.fail("listen", err)
		}
	}
	if err := d.validateTokens(f.Auth.Tokens); err != nil {
		return err
	}
	for _, name := range sortedKeys(f.Queues) {
		if err := d.validateQueue(name, f.Queues[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(f.Types) {
		if err := d.validateType(name, f.Types[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(f.Schedules) {
		s := f.Schedules[name]
		if err := d.validateSchedule(f, name, &s); err != nil {
			return err
		}
		f.Schedules[name] = s
	}
	for _, name := range sortedKeys(f.Batches) {
		b := f.Batches[name]
		if err := d.validateBatch(name, &b); err != nil {
			return err
		}
		f.Batches[name] = b
	}
	if d.set("history.keep") && f.History.Keep < 1 {
		return d.failf("history.keep", "must be at least 1, got %d", f.History.Keep)
	}
	if err := d.validateTracing(f.Tracing); err != nil {
		return err
	}
	for _, r := range []struct {
		key string
		d   time.Duration
	}{{"success", f.Retention.Success}, {"failed", f.Retention.Failed}, {"cancelled", f.Retention.Cancelled}, {"audit", f.Retention.Audit}} {
		if d.set("retention."+r.key) && r.d <= 0 {
			return d.failf("retention."+r.key, "must be positive, got %s", r.d)
		}
	}
	return nil
}

func (d *decoder) validateTracing(t Tracing) error {
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return d.failf("tracing.endpoint", "%q: want an http:// or https:// URL, such as http://otel-collector:4318", t.Endpoint)
		}
	}
	if t.Protocol != ProtocolHTTP {
		return d.failf("tracing.protocol", "%q: only %s is supported", t.Protocol, ProtocolHTTP)
	}
	if t.ServiceName == "" {
		return d.failf("tracing.service_name", "must not be empty")
	}
	if t.Sampling < 0 || t.Sampling > 1 {
		return d.failf("tracing.sampling", "%v: want a share from 0 to 1", t.Sampling)
	}
	return nil
}

// CheckListen checks a listen address: HOST:PORT with a port from 0 to
// 65535. The CLI applies it to --listen too.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid address %q: want host:port, such as 127.0.0.1:8080 or :8080", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("invalid port %q in %q: want a number from 0 to 65535", port, addr)
	}
	return nil
}

func (d *decoder) validateQueue(name string, q Queue) error {
	path := "queues." + name
	if d.set(path+".concurrency") && q.Concurrency < 1 {
		return d.failf(path+".concurrency", "must be at least 1, got %d", q.Concurrency)
	}
	if q.ClusterBurst < 0 || (q.ClusterBurst > 0 && q.ClusterRate.IsZero()) {
		return d.failf(path+".cluster_burst", "must be positive and go with a cluster_rate, got %d", q.ClusterBurst)
	}
	return nil
}

func (d *decoder) validateType(name string, t Type) error {
	path := "types." + name
	switch {
	case t.HTTP == nil && t.Command == nil:
		return d.failf(path, "no handler: set http: {url: ...} or command: [argv...]")
	case t.HTTP != nil && t.Command != nil:
		return d.failf(path, "both http and command are set: a type has exactly one handler")
	case t.HTTP != nil:
		if err := d.validateHTTP(path+".http", t.HTTP); err != nil {
			return err
		}
		if t.PermanentExitCodes != nil {
			return d.failf(path+".permanent_exit_codes", "only applies to command handlers; a webhook's status code decides")
		}
		if t.Env != nil {
			return d.failf(path+".env", "only applies to command handlers; a webhook gets the job in its request")
		}
		if d.set(path + ".kill_grace") {
			return d.failf(path+".kill_grace", "only applies to command handlers; a webhook request is aborted at once")
		}
	default:
		if len(t.Command) == 0 {
			return d.failf(path+".command", "empty argv: want the program and its arguments")
		}
		if t.Command[0] == "" {
			return d.failf(path+".command[0]", "empty program name")
		}
		for _, k := range sortedKeys(t.Env) {
			if !envName.MatchString(k) {
				return d.failf(path+".env."+k, "not a variable name: want letters, digits and _, not starting with a digit")
			}
			// The whole SLUICE_ namespace, so that a variable sluice adds
			// to a job's environment later cannot meet one a config set.
			if strings.HasPrefix(k, "SLUICE_") || k == "TRACEPARENT" {
				return d.failf(path+".env."+k, "sluice's own: SLUICE_* and TRACEPARENT carry the job (docs/http-api.md \"Handler protocol\")")
			}
		}
		if d.set(path+".kill_grace") && (t.KillGrace <= 0 || t.KillGrace > sluicetype.MaxKillGrace) {
			return d.failf(path+".kill_grace", "want more than 0 and at most %s (the time a shutdown leaves a stopped command), got %s", sluicetype.MaxKillGrace, t.KillGrace)
		}
		for i, c := range t.PermanentExitCodes {
			if c < 1 || c > 255 {
				return d.failf(fmt.Sprintf("%s.permanent_exit_codes[%d]", path, i), "exit code %d out of range 1-255", c)
			}
		}
	}
	if _, err := sluicetype.ParseOnStuck(t.OnStuck); err != nil {
		return d.failf(path+".on_stuck", "%v", err)
	}
	switch {
	case t.Timeout < 0:
		return d.failf(path+".timeout", "must not be negative, got %s", t.Timeout)
	case d.set(path+".deadline") && t.Deadline <= 0:
		return d.failf(path+".deadline", "must be positive, got %s", t.Deadline)
	case d.set(path+".progress_timeout") && t.ProgressTimeout <= 0:
		return d.failf(path+".progress_timeout", "must be positive, got %s", t.ProgressTimeout)
	case d.set(path+".lease") && t.Lease <= 0:
		return d.failf(path+".lease", "must be positive, got %s", t.Lease)
	case d.set(path+".max_attempts") && t.MaxAttempts < 1:
		return d.failf(path+".max_attempts", "must be at least 1, got %d", t.MaxAttempts)
	case d.set(path+".backoff.base") && t.Backoff.Base <= 0:
		return d.failf(path+".backoff.base", "must be positive, got %s", t.Backoff.Base)
	case d.set(path+".backoff.max") && t.Backoff.Max <= 0:
		return d.failf(path+".backoff.max", "must be positive, got %s", t.Backoff.Max)
	case t.Circuit.Threshold < 0:
		return d.failf(path+".circuit.threshold", "must not be negative, got %d", t.Circuit.Threshold)
	case d.set(path+".circuit.cooldown") && t.Circuit.Cooldown <= 0:
		return d.failf(path+".circuit.cooldown", "must be positive, got %s", t.Circuit.Cooldown)
	}
	return nil
}

func (d *decoder) validateHTTP(path string, h *HTTP) error {
	if h.URL == "" {
		return d.failf(path+".url", "required")
	}
	if h.Timeout < 0 {
		return d.failf(path+".timeout", "must not be negative, got %s", h.Timeout)
	}
	if _, later := d.unresolved[path+".secret"]; h.Secret == "" && d.set(path+".secret") && !later {
		// Sending unsigned requests because a variable was empty would
		// be a silent downgrade; leaving the key out is the way to ask.
		return d.failf(path+".secret", "empty secret (is its environment variable set?); remove the key to send unsigned requests")
	}
	return nil
}

func (d *decoder) validateSchedule(f *File, name string, s *Schedule) error {
	path := "schedules." + name
	if s.Cron == "" {
		return d.failf(path+".cron", "required")
	}
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil || s.Timezone == "" {
		return d.failf(path+".timezone", "unknown time zone %q: want an IANA name such as UTC or Asia/Shanghai", s.Timezone)
	}
	s.Location = loc
	// The scheduler parses with the same function, so what passes here runs.
	if _, err := cron.Parse(s.Cron, loc); err != nil {
		return d.fail(path+".cron", err)
	}
	if s.Type == "" {
		return d.failf(path+".type", "required")
	}
	if _, ok := f.Types[s.Type]; !ok {
		return d.failf(path+".type", "type %q is not defined under types", s.Type)
	}
	if s.CatchUp < 0 {
		return d.failf(path+".catch_up", "must not be negative, got %d", s.CatchUp)
	}
	return nil
}

// envName is a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
