package lock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sluicehq/sluice/driver/postgres"
)

// postgresLocker takes a session-level advisory lock on a connection set
// aside for the whole hold, since the lock belongs to the session that took
// it. The holder is found through pg_locks and named by the holder
// session's application_name, which it sets to "sluice UNIX ID" on
// acquisition; PostgreSQL cuts that to 63 bytes, so a long host name may be
// shortened.
type postgresLocker struct {
	db *sql.DB
	id string
}

// ErrPooler refuses the advisory-lock backend behind a transaction pooler:
// the lock belongs to a server session, which the pooler hands to other
// clients between transactions, so the lock would be neither held by us
// nor released when we die.
var ErrPooler = errors.New("pooler=transaction: an advisory lock belongs to a server session, which a transaction pooler hands to other clients between transactions; add lease=1 to the URL for a fenced lease row, which works through the pooler, or give a direct URL to the server")

// maxAppName is NAMEDATALEN-1, the longest application_name kept.
const maxAppName = 63

func openPostgres(rawURL string, opts Options) (*postgresLocker, error) {
	uc, err := postgres.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres lock: %w", err)
	}
	if uc.TransactionPooling {
		return nil, fmt.Errorf("postgres lock: %w", ErrPooler)
	}
	cfg := uc.Conn
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	cfg.RuntimeParams["application_name"] = truncate(opts.ID, maxAppName)
	db := stdlib.OpenDB(*cfg)
	db.SetConnMaxIdleTime(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout+5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres lock: connect to %s:%d database %q: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return &postgresLocker{db: db, id: opts.ID}, nil
}

// advisoryKey maps a name to the one-bigint advisory key space. pg_locks
// shows such a key as classid (high half) and objid (low half) with
// objsubid 1.
func advisoryKey(name string) (key, classid, objid int64) {
	h := fnv.New64a()
	h.Write([]byte("sluice lock " + name))
	u := h.Sum64()
	return int64(u), int64(u >> 32), int64(u & 0xffffffff)
}

const (
	pgAcquire = `SELECT CASE WHEN pg_try_advisory_lock($1) THEN set_config('application_name', $2, false) END`
	pgHolder  = `SELECT a.pid, coalesce(a.application_name, '') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`
	pgCheck = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
  AND pid = pg_backend_pid() AND classid = $1::bigint::oid AND objid = $2::bigint::oid
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`
	pgRelease = `SELECT pg_advisory_unlock($1), set_config('application_name', $2, false)`
)

func (p *postgresLocker) TryAcquire(ctx context.Context, name string, _ time.Duration) (Lease, Holder, error) {
	if err := CheckName(name); err != nil {
		return nil, Holder{}, err
	}
	key, classid, objid := advisoryKey(name)
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("postgres lock %s: connect: %w", name, err)
	}
	appName := truncate("sluice "+strconv.FormatInt(time.Now().Unix(), 10)+" "+p.id, maxAppName)
	// The holder may release between our attempt and the look-up of its
	// name; then the lock is simply tried again.
	for range 3 {
		var got sql.NullString
		if err := conn.QueryRowContext(ctx, pgAcquire, key, appName).Scan(&got); err != nil {
			discard(conn)
			return nil, Holder{}, fmt.Errorf("postgres lock %s: pg_try_advisory_lock: %w", name, err)
		}
		if got.Valid {
			return newPostgresLease(conn, name, truncate(p.id, maxAppName)), Holder{}, nil
		}
		var pid int64
		var app string
		err := conn.QueryRowContext(ctx, pgHolder, classid, objid).Scan(&pid, &app)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			discard(conn)
			return nil, Holder{}, fmt.Errorf("postgres lock %s: read holder: %w", name, err)
		}
		conn.Close()
		return nil, parsePostgresHolder(pid, app), nil
	}
	conn.Close()
	return nil, Holder{}, nil
}

func parsePostgresHolder(pid int64, app string) Holder {
	f := strings.SplitN(app, " ", 3)
	if len(f) == 3 && f[0] == "sluice" {
		if unix, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			return Holder{ID: f[2], Since: time.Unix(unix, 0)}
		}
	}
	return Holder{ID: fmt.Sprintf("postgres pid %d", pid)}
}

func (p *postgresLocker) Close() error { return p.db.Close() }

type postgresLease struct{ sessionLease }

// newPostgresLease is the lease on name's advisory lock, which conn's
// session holds; giving it up renames the session idleName.
func newPostgresLease(conn *sql.Conn, name, idleName string) *postgresLease {
	key, classid, objid := advisoryKey(name)
	return &postgresLease{sessionLease{backend: "postgres", name: name, conn: conn,
		holds: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			var held bool
			err := conn.QueryRowContext(ctx, pgCheck, classid, objid).Scan(&held)
			return held, err
		},
		unlock: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			var unlocked bool
			var app string
			err := conn.QueryRowContext(ctx, pgRelease, key, idleName).Scan(&unlocked, &app)
			return unlocked, err
		},
	}}
}

func (l *postgresLease) Fence() int64 { return 0 }

// truncate cuts s to n bytes on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
