package sluicetype

import (
	"slices"
	"strings"
)

// Scope is what an API token may do: the server checks it per route, the
// config accepts these names. docs/http-api.md "Scopes" lists which route
// needs which.
type Scope string

const (
	// ScopeRead may look: stats, job lists and details, /metrics,
	// /readyz, and the dashboard without its buttons.
	ScopeRead Scope = "read"
	// ScopeEnqueue may add jobs, of its token's types and queues only
	// when it names some, and nothing else.
	ScopeEnqueue Scope = "enqueue"
	// ScopeOperate may read and change jobs that exist: retry, cancel,
	// pause and resume queues, open and close circuits, run a bounded
	// pass, the dashboard's buttons. It does not enqueue.
	ScopeOperate Scope = "operate"
	// ScopeAdmin may do everything.
	ScopeAdmin Scope = "admin"
)

// Scopes lists every scope, in the order the docs give them.
var Scopes = []Scope{ScopeRead, ScopeEnqueue, ScopeOperate, ScopeAdmin}

// Valid reports whether s is one of Scopes.
func (s Scope) Valid() bool { return slices.Contains(Scopes, s) }

// Allows reports whether a token of scope s may use a route that needs
// scope need: admin may do everything, operate may also read.
func (s Scope) Allows(need Scope) bool {
	switch s {
	case ScopeAdmin:
		return true
	case ScopeOperate:
		return need == ScopeOperate || need == ScopeRead
	}
	return s == need
}

// ScopeNames is Scopes as the text of an error message.
func ScopeNames() string {
	names := make([]string, len(Scopes))
	for i, s := range Scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
