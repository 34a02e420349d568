// Package dashboard is sluice's operator dashboard: server-rendered pages
// from html/template with their stylesheet and script embedded, so there
// is no build step and nothing is loaded from elsewhere. It reads through
// the same Client and driver queries as the CLI and the JSON API.
//
// Access: a login form takes one of the API tokens and sets an HttpOnly,
// SameSite=Strict cookie holding a random session id, which the server
// maps to what the token's scope allows (Access); every form carries a
// CSRF token derived from that session.
package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/server/internal/brake"
	"github.com/sluicehq/sluice/sluicetype"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Config configures the dashboard.
type Config struct {
	Client *sluice.Client
	// Login checks a token typed into the login form: ok is whether the
	// token is one of the server's, Access what its session may do and
	// name the token's name, which the audit trail records as the actor
	// of the session's actions. nil means the server has no tokens and the
	// dashboard needs no login (every browser may Operate, recorded as
	// AnonymousActor).
	Login  func(token string) (a Access, name string, ok bool)
	Logger *slog.Logger
	// Secure reports whether the browser reached the server over TLS, so
	// that the session cookie is Secure; nil means r.TLS != nil.
	Secure func(r *http.Request) bool
	// ClientAddr is the client the brake counts failures of; nil means
	// the connection's address.
	ClientAddr func(r *http.Request) string
	// Brake is the brake on wrong tokens that the login form shares with
	// the API, so that a guess costs the same at every door; nil is a
	// brake of the login's own.
	Brake *brake.Brake
}

// AnonymousActor is the audit trail's actor of what a dashboard or API
// without tokens changes: anyone who reaches it, which CheckListen
// limits to loopback.
const AnonymousActor = "anonymous"

// Access is what a session may do, from its token's scope.
type Access int

const (
	// NoAccess is a valid token that may not use the dashboard: one that
	// may only enqueue. Its login is refused, without counting as a
	// wrong guess.
	NoAccess Access = iota
	// ReadOnly sees every page but no button that changes anything, and
	// its POSTs to them are refused.
	ReadOnly
	// Operate may also retry, cancel, pause and resume, open and close
	// circuits and run bulk actions.
	Operate
)

// Dashboard serves the pages. Build it with New.
type Dashboard struct {
	c      *sluice.Client
	check  func(string) (Access, string, bool) // Config.Login
	log    *slog.Logger
	sess   *sessions
	pages  map[string]*template.Template
	mux    *http.ServeMux
	live   *live
	brake  *brake.Brake
	secure func(*http.Request) bool
	addr   func(*http.Request) string
}

// Paths lists the path prefixes the dashboard owns, for the server's router.
var Paths = []string{"/", "/login", "/logout", "/jobs", "/failed", "/queues", "/schedules", "/batches", "/leases", "/workers", "/audit", "/circuits/", "/live.json", "/assets/"}

// New parses the templates and builds the dashboard.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: Config.Client is required")
	}
	d := &Dashboard{c: cfg.Client, check: cfg.Login, log: cfg.Logger, sess: newSessions(),
		pages: map[string]*template.Template{}, live: &live{c: cfg.Client},
		brake: cfg.Brake, secure: cfg.Secure, addr: cfg.ClientAddr}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.brake == nil {
		d.brake = brake.New(nil)
	}
	if d.secure == nil {
		d.secure = func(r *http.Request) bool { return r.TLS != nil }
	}
	if d.addr == nil {
		d.addr = func(r *http.Request) string {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				return r.RemoteAddr
			}
			return host
		}
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, err
		}
		d.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	m.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	m.HandleFunc("GET /login", d.loginForm)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.authed(d.logout))
	m.HandleFunc("GET /{$}", d.authed(d.overview))
	m.HandleFunc("GET /live.json", d.authed(d.liveJSON))
	m.HandleFunc("GET /jobs", d.authed(d.jobs))
	m.HandleFunc("GET /jobs/bulk", d.operate(d.bulkForm))
	m.HandleFunc("POST /jobs/bulk", d.operate(d.bulk))
	m.HandleFunc("GET /jobs/{id}", d.authed(d.job))
	m.HandleFunc("POST /jobs/{id}/retry", d.operate(d.retry))
	m.HandleFunc("POST /jobs/{id}/cancel", d.operate(d.cancel))
	m.HandleFunc("GET /failed", d.authed(d.failed))
	m.HandleFunc("POST /failed/retry", d.operate(d.retryGroup))
	m.HandleFunc("GET /queues", d.authed(d.queues))
	m.HandleFunc("POST /queues/{name}/{action}", d.operate(d.queueAction))
	m.HandleFunc("POST /circuits/{action}", d.operate(d.circuitAction))
	m.HandleFunc("GET /schedules", d.authed(d.schedules))
	m.HandleFunc("GET /batches", d.authed(d.batches))
	m.HandleFunc("GET /leases", d.authed(d.leases))
	m.HandleFunc("GET /workers", d.authed(d.workers))
	m.HandleFunc("GET /audit", d.operate(d.audit))
	d.mux = m
	return d, nil
}

// ServeHTTP sets the security headers and routes.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The script and stylesheet are our own files: nothing inline, nothing
	// from elsewhere, so an escaping bug still could not run a script. The
	// script may fetch from this origin only (the live pages poll /live.json).
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	d.mux.ServeHTTP(w, r)
}

// view is what every page template gets.
type view struct {
	Title string
	Nav   string
	CSRF  string
	Auth  bool
	// Operate shows the buttons that change jobs, queues and circuits;
	// a read-only session's pages leave them out.
	Operate bool
	Flash   string
	Data    any
}

type handler func(w http.ResponseWriter, r *http.Request, v *view)

// authed checks the session (and, on POST, the CSRF token) before h.
// Without tokens there is no login, but every browser still gets an
// anonymous id in a cookie and every form a CSRF token derived from it,
// so that a page on another origin cannot post a form that sluice takes.
func (d *Dashboard) authed(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := &view{}
		var actor string
		if q := r.URL.Query(); d.sess.flashOK(q.Get("flash"), q.Get("fsig")) {
			v.Flash = q.Get("flash")
		}
		if d.check == nil {
			id := d.sess.anonID(r, d.secure(r))
			if r.Method == http.MethodPost && (id == "" || !d.sess.csrfOK(anonPrefix+id, r.PostFormValue("csrf"))) {
				http.Error(w, "missing or wrong CSRF token; reload the page", http.StatusForbidden)
				return
			}
			if id == "" {
				id = randomID()
				setCookie(w, anonCookie, id, int(anonTTL.Seconds()), d.secure(r))
			}
			v.CSRF, v.Operate = d.sess.csrf(anonPrefix+id), true
			actor = AnonymousActor
		} else {
			id, ses := d.sess.session(r, d.secure(r))
			access := ses.access
			if id == "" {
				if r.Method != http.MethodGet {
					http.Error(w, "not logged in", http.StatusUnauthorized)
					return
				}
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			v.Auth, v.CSRF, v.Operate = true, d.sess.csrf(id), access >= Operate
			if r.Method == http.MethodPost && !d.sess.csrfOK(id, r.PostFormValue("csrf")) {
				http.Error(w, "missing or wrong CSRF token; reload the page", http.StatusForbidden)
				return
			}
			actor = ses.name
		}
		// Whatever the handler changes is recorded as this session's.
		r = r.WithContext(sluice.WithActor(r.Context(), sluice.Actor{Name: actor, Source: sluicetype.AuditDashboard, Address: d.addr(r)}))
		h(w, r, v)
	}
}

// operate is authed for the routes that change something: a session
// that may only read is refused them, whatever its page showed.
func (d *Dashboard) operate(h handler) http.HandlerFunc {
	return d.authed(func(w http.ResponseWriter, r *http.Request, v *view) {
		if !v.Operate {
			http.Error(w, "scope: this session's token has scope read; this needs scope operate (or admin)", http.StatusForbidden)
			return
		}
		h(w, r, v)
	})
}

func (d *Dashboard) render(w http.ResponseWriter, page string, v *view) {
	t := d.pages[page]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.log.Error("dashboard template failed", "page", page, "err", err)
		http.Error(w, "internal error; see the server log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

func (d *Dashboard) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, sluicetype.ErrNotFound):
		http.Error(w, "not found", http.StatusNotFound)
	case errors.Is(err, sluicetype.ErrWrongState):
		http.Error(w, "the job is not in a state that allows this", http.StatusConflict)
	default:
		var ie *sluice.InputError
		if errors.As(err, &ie) {
			http.Error(w, ie.Error(), http.StatusBadRequest)
			return
		}
		d.log.Error("dashboard request failed", "err", err)
		http.Error(w, "internal error; see the server log", http.StatusInternalServerError)
	}
}

// back redirects after a POST to a local path with a message, signed.
func (d *Dashboard) back(w http.ResponseWriter, r *http.Request, to, flash string) {
	u, err := url.Parse(localPath(to))
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	q := u.Query()
	q.Set("flash", flash)
	q.Set("fsig", d.sess.flashSig(flash))
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

func (d *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	d.render(w, "login", &view{Title: "Log in", Data: map[string]string{"Next": r.URL.Query().Get("next"), "Error": ""}})
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	next := r.PostFormValue("next")
	if d.check != nil {
		// The form is read before the brake's lock is taken: a slow body
		// must not hold it.
		token := r.PostFormValue("token")
		client, device := d.addr(r), d.sess.deviceID(r, d.secure(r))
		if device != "" && d.brake.Trusted(deviceClient(device)) {
			client = deviceClient(device)
		}
		var access Access
		var name string
		ok, wait := d.brake.Try(client, func() bool {
			var ok bool
			access, name, ok = d.check(token)
			return ok
		})
		if wait > 0 {
			d.c.Metrics().LoginFailed("throttled")
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			w.WriteHeader(http.StatusTooManyRequests)
			d.render(w, "login", &view{Title: "Log in", Data: map[string]string{"Next": next,
				"Error": "Too many failed attempts; try again in " + strconv.Itoa(secs) + "s."}})
			return
		}
		if !ok {
			d.c.Metrics().LoginFailed("wrong_token")
			w.WriteHeader(http.StatusForbidden)
			d.render(w, "login", &view{Title: "Log in", Data: map[string]string{"Next": next, "Error": "Token not accepted."}})
			return
		}
		if access == NoAccess {
			// A right token, so not a guess: the brake counted it as one
			// that passed. It only enqueues, and sees nothing here.
			w.WriteHeader(http.StatusForbidden)
			d.render(w, "login", &view{Title: "Log in", Data: map[string]string{"Next": next,
				"Error": "This token may only enqueue jobs; the dashboard needs a token of scope read, operate or admin."}})
			return
		}
		setCookie(w, sessionCookie, d.sess.create(access, name), int(sessionTTL.Seconds()), d.secure(r))
		if device == "" {
			device = randomID()
		}
		d.brake.Trust(deviceClient(device))
		setCookie(w, deviceCookie, device, int(brake.TrustFor.Seconds()), d.secure(r))
	}
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// localPath returns to if a browser would take it as a path on this
// origin, else "/". It reads to as the browser will: tabs and newlines
// are dropped anywhere, leading and trailing spaces and control
// characters trimmed, and a backslash is a slash, so "/\t/evil.example"
// and "/\\evil.example" are "//evil.example", another host.
func localPath(to string) string {
	to = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, to)
	to = strings.TrimFunc(to, func(r rune) bool { return r <= ' ' })
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") || strings.ContainsAny(to, "\\") ||
		strings.ContainsFunc(to, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "/"
	}
	u, err := url.Parse(to)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return to
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, _ *view) {
	if id, _ := d.sess.session(r, d.secure(r)); id != "" {
		d.sess.drop(id)
	}
	setCookie(w, sessionCookie, "", -1, d.secure(r))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// navItem is a link of the menu; Operate ones show to sessions that may
// operate only, as their pages answer only those.
type navItem struct {
	Key, Path, Label string
	Operate          bool
}

var nav = []navItem{
	{"overview", "/", "Overview", false}, {"jobs", "/jobs", "Jobs", false}, {"failed", "/failed", "Failed", false},
	{"queues", "/queues", "Queues", false}, {"schedules", "/schedules", "Schedules", false}, {"batches", "/batches", "Batches", false},
	{"leases", "/leases", "Locks and leases", false}, {"workers", "/workers", "Workers", false},
	{"audit", "/audit", "Audit", true},
}

// timeTag shows t in UTC inside a <time> element whose datetime the
// script rewrites in the viewer's time zone. The text is a formatted time,
// never user data.
func timeTag(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	u := t.UTC()
	return template.HTML(`<time datetime="` + u.Format(time.RFC3339Nano) + `">` + u.Format("2006-01-02 15:04:05 UTC") + `</time>`)
}

var funcs = template.FuncMap{
	"navItems": func() []navItem { return nav },
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
	"until": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		d := time.Until(t).Round(time.Second)
		if d < 0 {
			return (-d).String() + " ago"
		}
		return "in " + d.String()
	},
	"ts": timeTag,
	// ms is a duration to the millisecond, as an attempt's is shown.
	"ms": func(d time.Duration) time.Duration { return d.Round(time.Millisecond) },
	"tsp": func(t *time.Time) template.HTML {
		if t == nil {
			return "—"
		}
		return timeTag(*t)
	},
	// rate is failed over all attempts, as a percentage.
	// failedShare is sluicetype.Figures.FailedAttemptShare as a percentage
	// (app.js's rate shows the same).
	"failedShare": func(f sluicetype.Figures) string {
		share, ok := f.FailedAttemptShare()
		if !ok {
			return "—"
		}
		return strconv.FormatFloat(100*share, 'f', 1, 64) + "%"
	},
	"perMin": func(n int64, minutes float64) string {
		return strconv.FormatFloat(float64(n)/minutes, 'f', 2, 64) + "/min"
	},
	"secs": secs,
	"wait": wait,
	"clip": func(s string, n int) string { return driver.Truncate(s, n, false) },
	// final: the job will not run again, so it has no next run, and a
	// success's last_error is from an attempt before it, not a problem.
	"final": sluicetype.IsFinal,
}
