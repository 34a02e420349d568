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

// sessions maps random session ids to their expiry. The cookie holds the
// id only, never the token; a restart logs everyone out, which is fine
// for an operator's dashboard.
type sessions struct {
	key []byte // signs CSRF tokens

	mu  sync.Mutex
	ids map[string]time.Time
}

func newSessions() *sessions {
	key := make([]byte, 32)
	rand.Read(key)
	return &sessions{key: key, ids: map[string]time.Time{}}
}

func (s *sessions) create() string {
	id := randomID()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.ids {
		if now.After(exp) {
			delete(s.ids, k)
		}
	}
	s.ids[id] = now.Add(sessionTTL)
	return id
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.ids[id]
	return ok && time.Now().Before(exp)
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

// session returns the request's valid session id, or "".
func (s *sessions) session(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !s.valid(c.Value) {
		return ""
	}
	return c.Value
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
func (s *sessions) anonID(r *http.Request) string {
	c, err := r.Cookie(anonCookie)
	if err != nil || len(c.Value) != idLen {
		return ""
	}
	return c.Value
}

func setCookie(w http.ResponseWriter, name, value string, maxAge int, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure})
}
