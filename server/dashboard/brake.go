package dashboard

import (
	"sort"
	"sync"
	"time"
)

// The login brake: every address gets a few free failures (typos), then
// waits before each further attempt, twice as long each time; all
// addresses together get a bucket of failures that refills slowly, for an
// attacker with many addresses. A refused attempt is answered at once
// without checking its token, so nothing waits in a goroutine, and the
// map of addresses is bounded.
const (
	brakeFree      = 3
	brakeFirst     = time.Second
	brakeMax       = time.Minute
	brakeIdle      = 15 * time.Minute // an address's failures are forgotten after this long without one
	brakeAddrs     = 10000
	brakeRate      = 5.0 // failures per second, all addresses together
	brakeBurst     = 50.0
	brakeOneAtOnce = time.Second // the wait told to a second concurrent attempt from one address
)

type addrFailures struct {
	n     int       // consecutive failures
	last  time.Time // of the latest failure
	until time.Time // no attempt is checked before this
	busy  bool      // an attempt is being checked
}

type loginBrake struct {
	mu     sync.Mutex
	addrs  map[string]*addrFailures
	tokens float64 // of the global bucket
	filled time.Time
}

func newLoginBrake() *loginBrake {
	return &loginBrake{addrs: map[string]*addrFailures{}, tokens: brakeBurst, filled: time.Now()}
}

// admit reports 0 when an attempt from addr may be checked, else how long
// the client must wait. An admitted attempt must be followed by done.
func (b *loginBrake) admit(addr string) time.Duration {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.addrs[addr]
	if f != nil && now.Sub(f.last) > brakeIdle && !f.busy {
		delete(b.addrs, addr)
		f = nil
	}
	if f != nil {
		if f.busy {
			return brakeOneAtOnce
		}
		if now.Before(f.until) {
			return f.until.Sub(now)
		}
	}
	b.tokens = min(brakeBurst, b.tokens+now.Sub(b.filled).Seconds()*brakeRate)
	b.filled = now
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / brakeRate * float64(time.Second))
	}
	b.tokens-- // given back on success
	if f == nil {
		if len(b.addrs) >= brakeAddrs {
			b.evict(now)
		}
		f = &addrFailures{}
		b.addrs[addr] = f
	}
	f.busy = true
	return 0
}

// done records the outcome of an admitted attempt.
func (b *loginBrake) done(addr string, ok bool) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.addrs[addr]
	if ok {
		delete(b.addrs, addr)
		b.tokens = min(brakeBurst, b.tokens+1)
		return
	}
	if f == nil {
		return // evicted meanwhile; it only forgets
	}
	f.busy = false
	f.n++
	f.last = now
	if f.n >= brakeFree {
		f.until = now.Add(min(brakeFirst<<min(f.n-brakeFree, 16), brakeMax))
	}
}

// evict makes room: every address idle past brakeIdle goes, and if that
// is not enough, the tenth whose latest failure is oldest, so that the
// next brakeAddrs/10 new addresses need no scan. Their waits are
// forgotten, which the overall bucket still bounds.
func (b *loginBrake) evict(now time.Time) {
	type entry struct {
		addr string
		last time.Time
	}
	var keep []entry
	for a, f := range b.addrs {
		switch {
		case f.busy:
		case now.Sub(f.last) > brakeIdle:
			delete(b.addrs, a)
		default:
			keep = append(keep, entry{a, f.last})
		}
	}
	if len(b.addrs) < brakeAddrs {
		return
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].last.Before(keep[j].last) })
	for _, e := range keep[:min(len(keep), brakeAddrs/10)] {
		delete(b.addrs, e.addr)
	}
}
