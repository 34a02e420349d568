// Package brake slows down the guessing of API tokens. One Brake is
// shared by every door that checks a token (the JSON API, /metrics,
// /readyz and the dashboard's login form), so a guess costs the same
// wherever it is made. See docs/http-api.md, "Brakes".
//
// The rule, in full:
//
//   - Every client (an address, an IPv6 /64) gets Free failures, for
//     typos; then each further attempt waits, First after the Free-th
//     failure and twice as long after each next one, up to Max. A
//     client's failures are forgotten after Idle without one, and at once
//     when it presents a correct token.
//   - A client that presented a correct token within TrustFor is trusted.
//     (The dashboard also counts a browser by the device cookie it sets at
//     a login, while the brake trusts it: see Trust.)
//     An untrusted client's attempts also draw on one bucket shared by all
//     untrusted clients, refilled at Rate per second up to Burst: an
//     attacker with many addresses tests at most Burst + Rate×seconds
//     guesses overall, however many addresses it has. A trusted client is
//     never refused by that bucket, so an attack that empties it cannot
//     lock out the operator's known clients; a trusted client is still
//     braked by its own failures.
//
// A refused attempt is answered at once without checking its token, so
// that nothing waits in a goroutine and a refusal says nothing about the
// guess. The maps of clients and trusted clients are bounded.
package brake

import (
	"sort"
	"sync"
	"time"
)

// The numbers of the rule above; docs/http-api.md "Brakes" states them.
const (
	Free       = 3                // failures a client makes before it waits
	First      = time.Second      // its first wait, doubled after each further failure
	Max        = time.Minute      // its longest wait
	Idle       = 15 * time.Minute // its failures are forgotten after this long without one
	Rate       = 5.0              // failures per second, all untrusted clients together
	Burst      = 50.0             // failures the shared bucket holds
	TrustFor   = 24 * time.Hour   // a correct token makes its client trusted this long
	maxClients = 10000            // of each map
)

type failures struct {
	n     int       // consecutive failures
	last  time.Time // of the latest failure
	until time.Time // no attempt is checked before this
}

// Brake is safe for concurrent use. Build it with New.
type Brake struct {
	now     func() time.Time // the clock waits are measured on; tests move it
	mu      sync.Mutex
	clients map[string]*failures
	trusted map[string]time.Time // client → when it last presented a correct token
	tokens  float64              // of the shared bucket
	filled  time.Time
}

// New builds a brake on the clock now; nil is time.Now.
func New(now func() time.Time) *Brake {
	if now == nil {
		now = time.Now
	}
	return &Brake{now: now, clients: map[string]*failures{}, trusted: map[string]time.Time{}, tokens: Burst, filled: now()}
}

// Try runs check, which says whether the token of an attempt from client
// is correct, unless the brake refuses the attempt; then it returns how
// long the client must wait and check is not run. check runs under the
// brake's lock, so that concurrent attempts from one client are counted
// one after another: it must be quick, as a hash comparison is.
func (b *Brake) Try(client string, check func() bool) (ok bool, wait time.Duration) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.clients[client]
	if f != nil && now.Sub(f.last) > Idle {
		delete(b.clients, client)
		f = nil
	}
	if f != nil && now.Before(f.until) {
		return false, f.until.Sub(now)
	}
	t, trusted := b.trusted[client]
	trusted = trusted && now.Sub(t) <= TrustFor // as Trusted, under the lock already held
	if !trusted {
		b.tokens = min(Burst, b.tokens+now.Sub(b.filled).Seconds()*Rate)
		b.filled = now
		if b.tokens < 1 {
			return false, time.Duration((1 - b.tokens) / Rate * float64(time.Second))
		}
	}
	if check() {
		delete(b.clients, client)
		b.trust(client, now)
		return true, 0
	}
	if !trusted {
		b.tokens--
	}
	if f == nil {
		if len(b.clients) >= maxClients {
			b.evict(now)
		}
		f = &failures{}
		b.clients[client] = f
	}
	f.n++
	f.last = now
	if f.n >= Free {
		f.until = now.Add(min(First<<min(f.n-Free, 16), Max))
	}
	return false, 0
}

// Trusted reports whether client presented a correct token within
// TrustFor.
func (b *Brake) Trusted(client string) bool {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.trusted[client]
	return ok && now.Sub(t) <= TrustFor
}

// Trust makes client trusted from now, as if it had presented a correct
// token: the dashboard trusts the device cookie it sets at a login.
func (b *Brake) Trust(client string) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trust(client, now)
}

// trust records client's correct token. Only clients with a correct
// token get here, so the map is full only on a server with very many
// legitimate clients; then the one trusted longest ago is dropped.
func (b *Brake) trust(client string, now time.Time) {
	if _, ok := b.trusted[client]; !ok && len(b.trusted) >= maxClients {
		oldest, at := "", now
		for c, t := range b.trusted {
			if t.Before(at) {
				oldest, at = c, t
			}
		}
		delete(b.trusted, oldest)
	}
	b.trusted[client] = now
}

// evict makes room: every client idle past Idle goes, and if that is not
// enough, the tenth whose latest failure is oldest, so that the next
// maxClients/10 new clients need no scan. Their waits are forgotten,
// which the shared bucket still bounds.
func (b *Brake) evict(now time.Time) {
	type entry struct {
		client string
		last   time.Time
	}
	var keep []entry
	for c, f := range b.clients {
		if now.Sub(f.last) > Idle {
			delete(b.clients, c)
		} else {
			keep = append(keep, entry{c, f.last})
		}
	}
	if len(b.clients) < maxClients {
		return
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].last.Before(keep[j].last) })
	for _, e := range keep[:min(len(keep), maxClients/10)] {
		delete(b.clients, e.client)
	}
}
