package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

const (
	sessionCookie = "sluice_session"
	sessionTTL    = 12 * time.Hour
)

// sessions maps random session ids to their expiry and what they may do,
// from the scope of the token that logged in. The cookie holds the id
// only, never the token or its scope; a restart logs everyone out, which
// is fine for an operator's dashboard.
type sessions struct {
	key []byte // signs CSRF tokens

	mu  sync.Mutex
	ids map[string]session
}

type session struct {
	expires time.Time
	access  Access
	// name is the name of the token that logged in (never its value):
	// the actor of the session's actions in the audit trail.
	name string
}

func newSessions() *sessions {
	key := make([]byte, 32)
	rand.Read(key)
	return &sessions{key: key, ids: map[string]session{}}
}

func (s *sessions) create(a Access, name string) string {
	id := randomID()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ses := range s.ids {
		if now.After(ses.expires) {
			delete(s.ids, k)
		}
	}
	s.ids[id] = session{expires: now.Add(sessionTTL), access: a, name: name}
	return id
}

// valid returns the live session of id, and false when there is none.
func (s *sessions) valid(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.ids[id]
	if !ok || !time.Now().Before(ses.expires) {
		return session{}, false
	}
	return ses, true
}

func (s *sessions) drop(id string) {
	s.mu.Lock()
	delete(s.ids, id)
	s.mu.Unlock()
}

// csrf is the form token of a session: an HMAC of its id, so it needs no
// storage and is useless for another session.
func (s *sessions) csrf(id string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("csrf:" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *sessions) csrfOK(id, given string) bool {
	return given != "" && hmac.Equal([]byte(s.csrf(id)), []byte(given))
}

// flashSig signs a notice that a redirect after a POST carries in its
// URL, so that a page shows as sluice's own notice only text sluice wrote:
// a link with an attacker's ?flash= shows nothing.
func (s *sessions) flashSig(msg string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("flash:" + msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *sessions) flashOK(msg, sig string) bool {
	return msg != "" && sig != "" && hmac.Equal([]byte(s.flashSig(msg)), []byte(sig))
}

// session returns the request's valid session id and the session, or
// "".
func (s *sessions) session(r *http.Request, secure bool) (string, session) {
	c, err := r.Cookie(cookieName(sessionCookie, secure))
	if err != nil {
		return "", session{}
	}
	ses, ok := s.valid(c.Value)
	if !ok {
		return "", session{}
	}
	return c.Value, ses
}

// The anonymous id of a browser on a server without tokens: a random
// value in a cookie that the CSRF token of its forms is derived from. It
// needs no storage; anonPrefix keeps its CSRF tokens apart from those of
// login sessions.
const (
	anonCookie = "sluice_csrf"
	anonPrefix = "anon:"
	anonTTL    = 30 * 24 * time.Hour
	idLen      = 43 // base64 of 32 random bytes
)

func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// anonID returns the request's anonymous id, or "".
func (s *sessions) anonID(r *http.Request, secure bool) string {
	c, err := r.Cookie(cookieName(anonCookie, secure))
	if err != nil || len(c.Value) != idLen {
		return ""
	}
	return c.Value
}

// The device cookie: a random id set at each login, by which the brake
// knows this browser from other clients of its address (OWASP's "device
// cookies"). The brake trusts only ids it was told of at a login (Trust),
// so an id an attacker makes up counts as nothing and its attempts fall
// back to its address; one it was told of lets the browser log in while
// an attack from elsewhere keeps the shared bucket empty, from a new
// address too. It needs no signature: the id is 256 random bits and
// worthless once the brake forgets it.
const deviceCookie = "sluice_device"

// deviceID returns the request's device id, or "".
func (s *sessions) deviceID(r *http.Request, secure bool) string {
	c, err := r.Cookie(cookieName(deviceCookie, secure))
	if err != nil || len(c.Value) != idLen {
		return ""
	}
	return c.Value
}

// deviceClient is the brake's name for a device, apart from any address.
func deviceClient(id string) string { return "device:" + id }

// cookieName is name with the __Host- prefix over HTTPS: a browser then
// takes the cookie only from this host, Secure, for path /, so that a
// sibling subdomain or a plain-http page cannot plant a session or CSRF
// id for it.
func cookieName(name string, secure bool) string {
	if secure {
		return "__Host-" + name
	}
	return name
}

func setCookie(w http.ResponseWriter, name, value string, maxAge int, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(name, secure), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure})
}
