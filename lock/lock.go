// Package lock gives a process the exclusive right to a name, for
// `sluice lock NAME -- CMD` and for Go programs that need the same promise:
// while a Lease is held and renewed, no other holder of that name exists.
//
// The backends differ in what ends a lock whose holder vanished:
//
//   - file:DIR flock(2)s DIR/NAME.lock. The kernel frees the lock when the
//     process dies. It only covers one host, and flock over NFS is not to be
//     trusted.
//   - redis://HOST:PORT/DB sets a key with SET NX PX and a random token; the
//     lock lapses ttl after the last renewal. Fenced.
//   - mysql://... takes GET_LOCK on a connection kept for the whole hold; the
//     server frees it when that session ends. Fenced through a side table.
//     Refused on a Galera cluster node, where GET_LOCK is not cluster-wide.
//   - postgres://... takes pg_try_advisory_lock on a connection kept for the
//     whole hold; freed when that session ends. Refused with ErrPooler
//     when the URL says pooler=transaction: use ?lease=1 there.
//   - sqlite:PATH, or any database URL with ?lease=1, holds a row of
//     sluice_leases; the lock lapses ttl after the last renewal. Fenced.
//
// A fenced backend numbers its acquisitions: a later holder always sees a
// larger Fence, so a resource that remembers the largest fence it has seen
// can refuse writes from a holder that lost the lock without knowing it.
package lock

import (
	"context"
	"crypto/rand"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/sluicetype"
)

var (
	// ErrLost means the lease is no longer held: it expired and may have
	// been taken, its session ended, or it was already released.
	ErrLost = errors.New("lock lost")
	// ErrBadURL marks a backend URL whose scheme is not known; the CLI exits 2 on it.
	ErrBadURL = errors.New("unknown lock backend")
	// ErrGalera refuses the mysql:// backend on a Galera cluster node, where
	// GET_LOCK is local to the node; the lease backend (?lease=1) is safe there.
	ErrGalera = errors.New("GET_LOCK is node-local on Galera")
)

// MaxNameLen is the longest lock name, so that every backend can store it
// (sluice_leases.name is 191 characters, less the "lock:" prefix).
const MaxNameLen = 180

// Locker takes named locks on one backend. It is safe for concurrent use.
type Locker interface {
	// TryAcquire takes the lock without waiting. When the lock is busy it
	// returns a nil Lease and the current holder, as far as the backend
	// can tell. ttl bounds how long the lock outlives its last renewal on
	// backends that expire; session backends ignore it.
	TryAcquire(ctx context.Context, name string, ttl time.Duration) (Lease, Holder, error)
	// Close releases the backend's connections. Leases still held end
	// with them on session backends.
	Close() error
}

// Lease is one held lock. Its methods are safe to call concurrently, so a
// renewal loop may race a Release. Keep a Lease reachable until it is
// released: on the file backend the lock lives in an open file, which the
// garbage collector would close.
type Lease interface {
	// Fence is the acquisition's fencing number, larger than that of every
	// earlier acquisition of the name; 0 when the backend has none.
	Fence() int64
	// Renew extends the lease by its ttl, or checks that the session
	// holding it is alive. It returns an error wrapping ErrLost when the
	// lease is gone; other errors may be transient.
	Renew(ctx context.Context) error
	// Release gives the lock up. It returns an error wrapping ErrLost if
	// the lock was no longer ours, and nil when called again.
	Release(ctx context.Context) error
}

// Expirer is implemented by leases that end by themselves (the TTL
// backends). ReleaseAfter keeps the lock for d more and then lets it lapse,
// so that a short run can still hold its slot for a minimum time
// (`--min-hold`) without its process staying around.
type Expirer interface {
	ReleaseAfter(ctx context.Context, d time.Duration) error
}

// Holder names the process holding a lock.
type Holder struct {
	ID    string    // HOST:PID, or what the backend knows of the holder
	Since time.Time // when it took the lock; zero if unknown
}

// String is "HOST:PID since 2006-01-02T15:04:05Z".
func (h Holder) String() string {
	id := h.ID
	if id == "" {
		id = "an unknown holder"
	}
	if h.Since.IsZero() {
		return id
	}
	return id + " since " + h.Since.UTC().Format(time.RFC3339)
}

// Options apply to whichever backend the URL selects.
type Options struct {
	// ID names this process to contenders; default HOST:PID.
	ID string
	// Prefix is the table prefix of the database backends; default "sluice_".
	Prefix string
	// Metrics, if set, counts every TryAcquire that got an answer: a lock
	// taken, or found held. A sluice Client's Metrics() is one, so that a
	// program's locks show on its /metrics. The lock name is a label:
	// count only locks whose names come from a fixed set.
	Metrics Counter
}

// Counter counts lock attempts by lock name.
type Counter interface {
	LockAcquired(name string)
	LockBusy(name string)
}

// Open returns the Locker for url:
// file:DIR (file: alone is the system temp directory), redis://HOST:PORT/DB
// (or rediss://), mysql://USER:PASS@HOST:PORT/DB, postgres://USER:PASS@HOST:PORT/DB,
// sqlite:PATH, or a database URL with ?lease=1 for a sluice_leases row.
func Open(rawURL string, opts Options) (Locker, error) {
	if opts.ID == "" {
		opts.ID = DefaultID()
	}
	l, err := open(rawURL, opts)
	if err != nil || opts.Metrics == nil {
		return l, err
	}
	return counted{l, opts.Metrics}, nil
}

func open(rawURL string, opts Options) (Locker, error) {
	base, lease, err := splitLease(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(rawURL, "file:"):
		if lease {
			return nil, fmt.Errorf("lock backend %s: ?lease=1 needs a database URL", rawURL)
		}
		return openFile(rawURL, opts)
	case strings.HasPrefix(rawURL, "redis://"), strings.HasPrefix(rawURL, "rediss://"):
		if lease {
			return nil, fmt.Errorf("lock backend %s: ?lease=1 needs a database URL", redact(rawURL))
		}
		return openRedis(rawURL, opts)
	case strings.HasPrefix(rawURL, "sqlite:"), lease:
		return openLease(base, opts)
	case strings.HasPrefix(rawURL, "mysql://"):
		return openMySQL(base, opts)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return openPostgres(base, opts)
	}
	scheme, _, _ := strings.Cut(rawURL, ":")
	return nil, fmt.Errorf("%w %q: use file:DIR, redis://HOST:PORT/DB, mysql://..., postgres://..., sqlite:PATH or a database URL with ?lease=1", ErrBadURL, scheme)
}

// counted is a Locker whose attempts are counted, whatever the backend.
type counted struct {
	Locker
	m Counter
}

func (c counted) TryAcquire(ctx context.Context, name string, ttl time.Duration) (Lease, Holder, error) {
	l, h, err := c.Locker.TryAcquire(ctx, name, ttl)
	switch {
	case err != nil:
		// Neither taken nor busy: the backend did not answer.
	case l != nil:
		c.m.LockAcquired(name)
	default:
		c.m.LockBusy(name)
	}
	return l, h, err
}

// splitLease removes the lease parameter from a URL's query and reports
// whether it asked for the lease backend.
func splitLease(rawURL string) (string, bool, error) {
	base, query, ok := strings.Cut(rawURL, "?")
	if !ok {
		return rawURL, false, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", false, fmt.Errorf("lock backend %s: URL parameters: %w", redact(rawURL), err)
	}
	if !q.Has("lease") {
		return rawURL, false, nil
	}
	lease, err := strconv.ParseBool(q.Get("lease"))
	if err != nil {
		return "", false, fmt.Errorf("lock backend %s: lease=%s: want 1 or 0", redact(rawURL), q.Get("lease"))
	}
	q.Del("lease")
	if len(q) > 0 {
		base += "?" + q.Encode()
	}
	return base, lease, nil
}

// DefaultID is HOST:PID, the holder name contenders are shown.
func DefaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// CheckName reports whether name can name a lock on every backend.
func CheckName(name string) error {
	if err := sluicetype.CheckName(name, MaxNameLen); err != nil {
		return fmt.Errorf("lock name: %w", err)
	}
	return nil
}

// token is a random value that tells one acquisition from every other,
// so that a stale lease can never renew or release its successor's lock.
func token() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// redact hides the password in a URL for messages, in its user info or,
// as pgx reads it from a postgres:// URL, its query.
func redact(raw string) string { return dburl.Redact(raw) }

// discard closes a connection instead of pooling it, so that a session in
// an unknown state, perhaps still holding a lock, is never reused.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return sqldriver.ErrBadConn })
	conn.Close()
}

// sessionCtx is ctx for a query on a connection that holds a session lock:
// it keeps ctx's deadline but not its cancellation. A query cut off by
// cancellation closes the connection, and with it the session and its
// lock, so a holder that stops renewing (Keep's context ending just
// before Release) would lose the lock it was about to release cleanly. A
// renewal past its deadline is meant to fail, and still does.
func sessionCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	out := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(out, d)
	}
	return out, func() {}
}
