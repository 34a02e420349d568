package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

// Scope is what a token may do (package sluicetype defines them, for
// the config as well). docs/http-api.md "Scopes" lists which route needs
// which.
type Scope = sluicetype.Scope

// The scopes, by the names this package used before they moved.
const (
	ScopeRead    = sluicetype.ScopeRead
	ScopeEnqueue = sluicetype.ScopeEnqueue
	ScopeOperate = sluicetype.ScopeOperate
	ScopeAdmin   = sluicetype.ScopeAdmin
)

// Token is an accepted Bearer token with what it may do.
type Token struct {
	// Name stands for the token in logs and refusals; its value is never
	// shown.
	Name  string
	Value string
	Scope Scope
	// Types and Queues limit a ScopeEnqueue token to these job types and
	// queues (a job that names no queue goes to its type's); empty allows
	// any.
	Types  []string
	Queues []string
}

// admin is the token of a request on a server without tokens, which
// only listens on loopback (CheckListen) and lets everything through.
var admin = Token{Scope: ScopeAdmin}

// hashedToken is a token as kept for matching: hashed so that every
// comparison has the same length (ConstantTimeCompare returns early on a
// length mismatch).
type hashedToken struct {
	hash [sha256.Size]byte
	Token
}

// match finds the token given, comparing against every one without
// stopping at a match, so that timing reveals neither whether nor which
// token matched.
func (s *Server) match(given string) (Token, bool) {
	h := sha256.Sum256([]byte(given))
	found := -1
	for i := range s.tokens {
		eq := subtle.ConstantTimeCompare(h[:], s.tokens[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Token{}, false
	}
	return s.tokens[found].Token, true
}

type tokenKey struct{}

// tokenOf is the token a request was authorized with.
func tokenOf(r *http.Request) Token {
	if t, ok := r.Context().Value(tokenKey{}).(Token); ok {
		return t
	}
	return admin
}

func withToken(r *http.Request, t Token) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), tokenKey{}, t))
}

// label names a token in a refusal: by its name, never its value.
func (t Token) label() string {
	if t.Name == "" {
		return "this token"
	}
	return fmt.Sprintf("token %q", t.Name)
}

// scopeRefusal is the 403 message for a token whose scope does not
// cover a route, or "" when it does.
func scopeRefusal(t Token, route string, need Scope) string {
	if t.Scope.Allows(need) {
		return ""
	}
	return fmt.Sprintf("scope: %s has scope %s; %s needs scope %s", t.label(), t.Scope, route, need)
}

// mayEnqueue refuses, with 403 naming the field, a job outside the
// types and queues that t is limited to. field prefixes the job's
// fields ("" for POST /v1/jobs, "[2]." in /v1/jobs/many, as its
// other errors do).
func (s *Server) mayEnqueue(t Token, field string, p sluice.EnqueueParams) error {
	if len(t.Types) > 0 && !slices.Contains(t.Types, p.Type) {
		return &requestError{code: http.StatusForbidden, msg: fmt.Sprintf("%stype: %s may not enqueue type %q; it may enqueue %s",
			field, t.label(), p.Type, strings.Join(t.Types, ", "))}
	}
	if len(t.Queues) > 0 {
		q := p.Queue
		if q == "" {
			q = s.client.QueueOf(p.Type)
		}
		if !slices.Contains(t.Queues, q) {
			return &requestError{code: http.StatusForbidden, msg: fmt.Sprintf("%squeue: %s may not enqueue to queue %q; it may enqueue to %s",
				field, t.label(), q, strings.Join(t.Queues, ", "))}
		}
	}
	return nil
}
