// Package server is sluice's HTTP API: enqueue, inspect and manage jobs,
// trigger a bounded run from cron, and report health. See
// docs/reference.md "HTTP API".
package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/server/dashboard"
)

// DefaultMaxBody is the largest request body accepted when Config.MaxBody
// is 0: a job whose payload is as large as the rules allow
// (sluice.MaxPayloadBytes), with room for the rest of its request.
const DefaultMaxBody = sluice.MaxPayloadBytes + 64<<10

// Config configures the API handler.
type Config struct {
	Client *sluice.Client
	// Tokens are the accepted Bearer tokens; none means no authentication,
	// which CheckListen allows only on a loopback address.
	Tokens []string
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
}

// Server serves the API. Build it with New.
type Server struct {
	client     *sluice.Client
	tokens     [][sha256.Size]byte
	allow      []netip.Prefix
	queryToken bool
	log        *slog.Logger
	maxBody    int64
	mux        *http.ServeMux
	dash       *dashboard.Dashboard
	guard      *guard
	scrub      scrubber
}

// New checks cfg and returns the API handler.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("server: Config.Client is required")
	}
	s := &Server{client: cfg.Client, queryToken: cfg.QueryToken, log: cfg.Logger, maxBody: cfg.MaxBody}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	for i, t := range cfg.Tokens {
		if t == "" {
			// An empty token would be matched by an empty Bearer value, and
			// usually means an unset ${VAR} in the config.
			return nil, fmt.Errorf("server: tokens[%d] is empty (an unset environment variable?)", i)
		}
		// Tokens are kept as hashes so that every comparison has the same
		// length: ConstantTimeCompare returns early on a length mismatch.
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	// The log scrubber needs the tokens themselves, to find them in any
	// part of a request path.
	s.scrub = scrubber{tokens: cfg.Tokens}
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
	dcfg := dashboard.Config{Client: cfg.Client, Logger: s.log, Secure: g.secure, ClientAddr: g.clientAddr}
	if len(s.tokens) > 0 {
		dcfg.TokenOK = s.tokenOK
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

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("POST /v1/jobs", s.enqueue)
	m.HandleFunc("POST /v1/jobs/many", s.enqueueMany)
	// The old name of /v1/jobs/many ("batch" now means only keyset
	// batches): a client that still calls it is told where it went, not
	// answered 404 or enqueued in silence.
	m.HandleFunc("POST /v1/jobs/batch", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusGone, "POST /v1/jobs/batch is now POST /v1/jobs/many, with the same body and answer")
	})
	m.HandleFunc("GET /v1/jobs", s.listJobs)
	m.HandleFunc("GET /v1/jobs/{id}", s.getJob)
	m.HandleFunc("POST /v1/jobs/{id}/retry", s.retryJob)
	m.HandleFunc("POST /v1/jobs/{id}/cancel", s.cancelJob)
	m.HandleFunc("POST /v1/run", s.run)
	m.HandleFunc("GET /v1/stats", s.stats)
	m.HandleFunc("POST /v1/queues/{name}/pause", s.pauseQueue)
	m.HandleFunc("POST /v1/queues/{name}/resume", s.resumeQueue)
	m.HandleFunc("POST /v1/circuits/{type}/open", s.openCircuit)
	m.HandleFunc("POST /v1/circuits/{type}/close", s.closeCircuit)
	// Behind the same Bearer tokens as the API: Prometheus sends one with
	// authorization.credentials in its scrape config.
	m.Handle("GET /metrics", s.client.Metrics())
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
	if r.URL.Path != "/healthz" {
		if code, msg := s.authorize(r); code != 0 {
			if code == http.StatusUnauthorized {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			}
			writeError(rec, code, msg)
			return
		}
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		// The mux answers unknown paths and wrong methods in plain text;
		// the API promises JSON errors everywhere.
		s.mux.ServeHTTP(&jsonErrorWriter{ResponseWriter: rec}, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// authorize returns 0 when the request may proceed, else a status and message.
func (s *Server) authorize(r *http.Request) (int, string) {
	if len(s.allow) > 0 && !s.allowed(r.RemoteAddr) {
		return http.StatusForbidden, "client address is not in allow_cidrs"
	}
	if len(s.tokens) == 0 {
		return 0, ""
	}
	var given string
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return http.StatusUnauthorized, "authorization: want the header Authorization: Bearer TOKEN"
		}
		given = strings.TrimSpace(tok)
	} else if q := r.URL.Query().Get("token"); q != "" {
		if !s.queryToken {
			return http.StatusUnauthorized, "token: query tokens are disabled (auth.query_token: false); send Authorization: Bearer TOKEN"
		}
		given = q
	} else {
		return http.StatusUnauthorized, "authorization: missing; send Authorization: Bearer TOKEN"
	}
	if !s.tokenOK(given) {
		return http.StatusForbidden, "authorization: token not accepted"
	}
	return 0, ""
}

// tokenOK compares against every token without stopping at a match, so
// that timing reveals neither whether nor which token matched.
func (s *Server) tokenOK(given string) bool {
	h := sha256.Sum256([]byte(given))
	match := 0
	for i := range s.tokens {
		match |= subtle.ConstantTimeCompare(h[:], s.tokens[i][:])
	}
	return match == 1
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
