package sqldriver

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// PoolParam is the URL parameter that caps the connections one sluice
// process opens to a MySQL or PostgreSQL server: its pool, which the
// claimers, completers, heartbeats and callers' transactions share
// (PostgreSQL's LISTEN connection comes on top). The name is pgx's own for
// its pool's size. Each process has its own pool, so a cluster of N
// processes holds up to N times this; a server's max_connections must
// leave room for it and the application.
const PoolParam = "pool_max_conns"

// Bounds of PoolParam. Below minPool, the writers a process runs at once
// (a claim, a completion batch, a heartbeat, a caller's transaction) would
// wait for each other's connections on every busy tick; the bound above
// only catches a typo.
const (
	minPool = 4
	maxPool = 1000
)

// PoolSize takes PoolParam out of q and returns its value, or def when q
// has none. scheme names the URL in errors.
func PoolSize(scheme string, q url.Values, def int) (int, error) {
	v, ok := q[PoolParam]
	if !ok {
		return def, nil
	}
	q.Del(PoolParam)
	if len(v) == 1 {
		if n, err := strconv.Atoi(v[0]); err == nil && n >= minPool && n <= maxPool {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s URL parameter %s=%s: want one whole number from %d to %d (connections per process)", scheme, PoolParam, strings.Join(v, ","), minPool, maxPool)
}
