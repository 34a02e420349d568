// Package server is sluice's HTTP API: enqueue, inspect and manage jobs,
// trigger a bounded run from cron, and report health. See
// docs/reference.md "HTTP API".
package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/authtoken"
	"github.com/sluicehq/sluice/server/dashboard"
	"github.com/sluicehq/sluice/server/internal/brake"
	"github.com/sluicehq/sluice/sluicetype"
)

// DefaultMaxBody is the largest request body accepted when Config.MaxBody
// is 0: a job whose payload is as large as the rules allow
// (sluice.MaxPayloadBytes), with room for the rest of its request.
const DefaultMaxBody = sluice.MaxPayloadBytes + 64<<10

// Config configures the API handler.
type Config struct {
	Client *sluice.Client
	// Tokens are accepted Bearer tokens of ScopeAdmin, named tokens[i]
	// in logs and refusals; ScopedTokens are tokens with their own name
	// and scope. None of either means no authentication, which
	// CheckListen allows only on a loopback address. Each must carry at
	// least 128 bits of entropy (New refuses a weaker one; `sluice token
	// new` prints a good one), and wrong ones are braked (package brake).
	Tokens       []string
	ScopedTokens []Token
	// AllowCIDRs limits clients by their connection's address (RemoteAddr;
	// X-Forwarded-For is ignored because any client can set it).
	AllowCIDRs []string
	// QueryToken accepts ?token= for crontab-style callers that cannot set
	// headers. Off by default: URLs end up in proxy and shell histories.
	QueryToken bool
	Logger     *slog.Logger
	// MaxBody caps request bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// Listen is the address the server listens on; a host name in it is
	// one the server answers to.
	Listen string
	// AllowedHosts are further host names the server answers to (the
	// Host header), besides IP literals, localhost and Listen's host.
	AllowedHosts []string
	// TrustedProxies are the CIDRs of reverse proxies whose
	// X-Forwarded-For and X-Forwarded-Proto headers are believed.
	TrustedProxies []string
	// PublicURL is the address browsers use, such as
	// https://sluice.example.com behind a TLS proxy: its host is allowed
	// and, when https, the session cookie is Secure.
	PublicURL string
	// Clock is what the brake on wrong tokens measures its waits on; nil
	// is time.Now. Tests pass a clock they move.
	Clock func() time.Time
}

// Server serves the API. Build it with New.
type Server struct {
	client     *sluice.Client
	progress   progressWrites
	tokens     []hashedToken
	scopes     map[string]Scope // by mux pattern: what its route needs
	allow      []netip.Prefix
	queryToken bool
	log        *slog.Logger
	maxBody    int64
	mux        *http.ServeMux
	dash       *dashboard.Dashboard
	guard      *guard
	brake      *brake.Brake // on wrong tokens, shared with the dashboard's login
	scrub      scrubber
}

// New checks cfg and returns the API handler.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("server: Config.Client is required")
	}
	s := &Server{client: cfg.Client, queryToken: cfg.QueryToken, log: cfg.Logger, maxBody: cfg.MaxBody,
		progress: progressWrites{jobs: map[int64]*progressSlot{}}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	all := make([]Token, 0, len(cfg.Tokens)+len(cfg.ScopedTokens))
	for i, t := range cfg.Tokens {
		all = append(all, Token{Name: fmt.Sprintf("tokens[%d]", i), Value: t, Scope: ScopeAdmin})
	}
	all = append(all, cfg.ScopedTokens...)
	names := map[string]bool{}
	seen := map[string]string{} // value to name
	var values []string
	for _, t := range all {
		if t.Value == "" {
			// An empty token would be matched by an empty Bearer value, and
			// usually means an unset ${VAR} in the config.
			return nil, fmt.Errorf("server: token %s is empty (an unset environment variable?)", t.Name)
		}
		if err := authtoken.Check(t.Value); err != nil {
			return nil, fmt.Errorf("server: token %s: %w", t.Name, err)
		}
		if t.Name == "" || names[t.Name] {
			return nil, fmt.Errorf("server: token name %q is empty or used twice; a token's name stands for it in logs and refusals", t.Name)
		}
		names[t.Name] = true
		if other, dup := seen[t.Value]; dup {
			// One value under two scopes would be matched as either.
			return nil, fmt.Errorf("server: tokens %s and %s have the same value", other, t.Name)
		}
		seen[t.Value] = t.Name
		if !t.Scope.Valid() {
			return nil, fmt.Errorf("server: token %s: scope %q is not one of %s", t.Name, t.Scope, sluicetype.ScopeNames())
		}
		if (len(t.Types) > 0 || len(t.Queues) > 0) && t.Scope != ScopeEnqueue {
			return nil, fmt.Errorf("server: token %s: only a token of scope enqueue can be limited to types or queues", t.Name)
		}
		s.tokens = append(s.tokens, hashedToken{hash: sha256.Sum256([]byte(t.Value)), Token: t})
		values = append(values, t.Value)
	}
	// The log scrubber needs the tokens themselves, to find them in any
	// part of a request path.
	s.scrub = scrubber{tokens: values}
	g, err := newGuard(cfg)
	if err != nil {
		return nil, err
	}
	s.guard = g
	for i, c := range cfg.AllowCIDRs {
		p, err := parseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("server: allow_cidrs[%d] %q: not a CIDR such as 10.0.0.0/8 or an IP address", i, c)
		}
		s.allow = append(s.allow, p)
	}
	s.brake = brake.New(cfg.Clock)
	dcfg := dashboard.Config{Client: cfg.Client, Logger: s.log, Secure: g.secure, ClientAddr: g.clientAddr, Brake: s.brake}
	if len(s.tokens) > 0 {
		dcfg.Login = s.login
	}
	dash, err := dashboard.New(dcfg)
	if err != nil {
		return nil, fmt.Errorf("server: dashboard: %w", err)
	}
	s.dash = dash
	s.routes()
	return s, nil
}

// apiPath reports whether a path belongs to the JSON API, /metrics or the
// health checks, which take Bearer tokens; every other path is the
// dashboard's, which takes its session cookie.
func apiPath(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == "/metrics" || p == "/healthz" || p == "/readyz"
}

// parseCIDR accepts a prefix or a bare address, which means that host alone.
func parseCIDR(c string) (netip.Prefix, error) {
	c = strings.TrimSpace(c)
	if p, err := netip.ParsePrefix(c); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(c)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// route is one API route and the scope a token needs for it.
type route struct {
	pattern string
	scope   Scope // "" for /healthz, which takes no token, and progressPattern
	h       http.HandlerFunc
}

// routes registers the API. The scope of every route is set here, in
// one table, and checked in ServeHTTP before its handler runs.
func (s *Server) routes() {
	table := []route{
		{"GET /healthz", "", s.healthz},
		{"GET /readyz", ScopeRead, s.readyz},
		{"POST /v1/jobs", ScopeEnqueue, s.enqueue},
		{"POST /v1/jobs/many", ScopeEnqueue, s.enqueueMany},
		// The old name of /v1/jobs/many ("batch" now means only keyset
		// batches): a client that still calls it is told where it went,
		// not answered 404 or enqueued in silence.
		{"POST /v1/jobs/batch", ScopeEnqueue, func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusGone, "POST /v1/jobs/batch is now POST /v1/jobs/many, with the same body and answer")
		}},
		{"GET /v1/jobs", ScopeRead, s.listJobs},
		{"GET /v1/jobs/{id}", ScopeRead, s.getJob},
		// An attempt's output can hold what the job's payload holds:
		// read, like the job itself.
		{"GET /v1/jobs/{id}/logs", ScopeRead, s.jobLogs},
		{"POST /v1/jobs/{id}/retry", ScopeOperate, s.retryJob},
		{"POST /v1/jobs/{id}/cancel", ScopeOperate, s.cancelJob},
		// Authenticated by the attempt's progress token, not a scope.
		{progressPattern, "", s.reportProgress},
		// A bounded run changes jobs like a retry does: it is operate's.
		{"POST /v1/run", ScopeOperate, s.run},
		{"GET /v1/stats", ScopeRead, s.stats},
		{"POST /v1/queues/{name}/pause", ScopeOperate, s.pauseQueue},
		{"POST /v1/queues/{name}/resume", ScopeOperate, s.resumeQueue},
		{"POST /v1/circuits/{type}/open", ScopeOperate, s.openCircuit},
		{"POST /v1/circuits/{type}/close", ScopeOperate, s.closeCircuit},
		// Who did what from where is for those who act, not for every
		// reader: a read token is often a monitoring system's.
		{"GET /v1/audit", ScopeOperate, s.audit},
		// Behind the same Bearer tokens as the API: Prometheus sends one
		// with authorization.credentials in its scrape config.
		{"GET /metrics", ScopeRead, s.client.Metrics().ServeHTTP},
	}
	m := http.NewServeMux()
	s.scopes = map[string]Scope{}
	for _, rt := range table {
		m.HandleFunc(rt.pattern, rt.h)
		s.scopes[rt.pattern] = rt.scope
	}
	s.mux = m
}

// ServeHTTP logs, recovers, authenticates and routes one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			// The stack goes to the log only; the client learns nothing
			// about the internals.
			s.log.Error("http handler panic", "method", r.Method, "path", s.scrub.scrub(r.URL.Path),
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, "internal error")
			}
		}
		attrs := []any{"method", r.Method, "path", s.scrub.scrub(r.URL.Path), "status", rec.status(), "duration", time.Since(start), "remote", r.RemoteAddr}
		if r.URL.RawQuery != "" {
			attrs = append(attrs, "query", s.scrub.scrub(r.URL.RawQuery))
		}
		if t, ok := r.Context().Value(tokenKey{}).(Token); ok && t.Name != "" {
			attrs = append(attrs, "token", t.Name) // who asked, by name
		}
		s.log.Info("http request", attrs...)
	}()

	api := apiPath(r.URL.Path)
	refuse := func(code int, msg string) {
		if api {
			writeError(rec, code, msg)
			return
		}
		http.Error(rec, msg, code)
	}
	if !s.guard.hostOK(r) {
		refuse(http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not one this server answers to; add it to auth.allowed_hosts (or set auth.public_url)", r.Host))
		return
	}
	if err := s.guard.cop.Check(r); err != nil {
		refuse(http.StatusForbidden, "refused a cross-origin request: "+err.Error())
		return
	}
	if !api {
		if len(s.allow) > 0 && !s.allowed(r.RemoteAddr) {
			http.Error(rec, "client address is not in allow_cidrs", http.StatusForbidden)
			return
		}
		s.dash.ServeHTTP(rec, r)
		return
	}
	if ok, msg := jsonBody(r); !ok {
		writeError(rec, http.StatusUnsupportedMediaType, msg)
		return
	}
	_, pattern := s.mux.Handler(r)
	if pattern == progressPattern {
		// The receiver's token is the attempt's (reportProgress checks
		// it); the client addresses allowed are the API's.
		if len(s.allow) > 0 && !s.allowed(r.RemoteAddr) {
			writeError(rec, http.StatusForbidden, "client address is not in allow_cidrs")
			return
		}
	} else if r.URL.Path != "/healthz" {
		tok, code, msg := s.authorize(rec, r)
		if code != 0 {
			if code == http.StatusUnauthorized {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			}
			writeError(rec, code, msg)
			return
		}
		r = withToken(r, tok)
		// What the request changes is recorded in the audit trail as the
		// token's, by its name, from the client's address.
		name := tok.Name
		if name == "" {
			name = dashboard.AnonymousActor
		}
		r = r.WithContext(sluice.WithActor(r.Context(), sluice.Actor{Name: name, Source: sluicetype.AuditAPI, Address: s.guard.clientAddr(r)}))
	}
	if pattern == "" {
		// The mux answers unknown paths and wrong methods in plain text;
		// the API promises JSON errors everywhere.
		s.mux.ServeHTTP(&jsonErrorWriter{ResponseWriter: rec}, r)
		return
	}
	if need := s.scopes[pattern]; need != "" {
		if msg := scopeRefusal(tokenOf(r), pattern, need); msg != "" {
			writeError(rec, http.StatusForbidden, msg)
			return
		}
	}
	s.mux.ServeHTTP(rec, r)
}

// authorize returns the request's token and 0 when it may proceed, else
// a status and message. A token is checked under the brake (package
// brake has the rule), which may refuse it unchecked; a request without
// one is not a guess. Without tokens every request is admin's.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (Token, int, string) {
	if len(s.allow) > 0 && !s.allowed(r.RemoteAddr) {
		return Token{}, http.StatusForbidden, "client address is not in allow_cidrs"
	}
	if len(s.tokens) == 0 {
		return admin, 0, ""
	}
	var given string
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return Token{}, http.StatusUnauthorized, "authorization: want the header Authorization: Bearer TOKEN"
		}
		given = strings.TrimSpace(tok)
	} else if q := r.URL.Query().Get("token"); q != "" {
		if !s.queryToken {
			return Token{}, http.StatusUnauthorized, "token: query tokens are disabled (auth.query_token: false); send Authorization: Bearer TOKEN"
		}
		given = q
	} else {
		return Token{}, http.StatusUnauthorized, "authorization: missing; send Authorization: Bearer TOKEN"
	}
	var tok Token
	ok, wait := s.brake.Try(s.guard.clientAddr(r), func() bool {
		var ok bool
		tok, ok = s.match(given)
		return ok
	})
	if wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return Token{}, http.StatusTooManyRequests, fmt.Sprintf("authorization: too many wrong tokens from this client; retry in %ds", secs)
	}
	if !ok {
		return Token{}, http.StatusForbidden, "authorization: token not accepted"
	}
	return tok, 0, ""
}

// login checks a token typed into the dashboard's login form and says
// what its session may do.
func (s *Server) login(given string) (dashboard.Access, string, bool) {
	t, ok := s.match(given)
	if !ok {
		return dashboard.NoAccess, "", false
	}
	switch {
	case t.Scope.Allows(ScopeOperate):
		return dashboard.Operate, t.Name, true
	case t.Scope.Allows(ScopeRead):
		return dashboard.ReadOnly, t.Name, true
	}
	return dashboard.NoAccess, t.Name, true
}

func (s *Server) allowed(remote string) bool {
	a, ok := remoteIP(remote)
	return ok && inAny(s.allow, a)
}

// statusWriter records the status for the log and whether a response began.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// jsonErrorWriter turns the mux's plain-text 404 and 405 into JSON errors,
// keeping its headers (Allow on a 405).
type jsonErrorWriter struct {
	http.ResponseWriter
	replaced bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	msg := strings.ToLower(http.StatusText(code))
	if code == http.StatusMethodNotAllowed {
		msg += "; allowed: " + w.Header().Get("Allow")
	}
	w.Header().Del("X-Content-Type-Options")
	writeError(w.ResponseWriter, code, msg)
}

func (w *jsonErrorWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil // the plain-text body is replaced
	}
	return w.ResponseWriter.Write(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	// An error here is the client going away; the status is already logged.
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
