package lock

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/sluicehq/sluice/driver/mysql"
)

// mysqlLocker takes GET_LOCK on a connection set aside for the whole hold:
// a named lock belongs to its session, so a pooled connection handed back
// would take the lock with it, and a new one would not hold it.
//
// The server cannot say who holds a named lock beyond a connection id, so
// each holder writes its name into PREFIXlock_holders, a table of sluice's
// schema (made by `sluice migrate`, or when the backend opens), keyed by
// the lock name and stamped with its connection id; a contender trusts
// only the row whose id IS_USED_LOCK reports. The same row counts
// acquisitions, which gives MySQL locks a fencing number: only the holder
// of the named lock ever writes its row.
type mysqlLocker struct {
	db     *sql.DB
	id     string
	dbName string
	q      mysqlQueries
}

type mysqlQueries struct {
	record, fence, busy string
}

// openMySQL migrates the database (see migrate) and takes the holders
// table's SQL from the MySQL driver, which owns the table; the driver is
// closed again, since each held lock needs a connection of its own and the
// driver's pool is bounded.
func openMySQL(rawURL string, opts Options) (*mysqlLocker, error) {
	cfg, err := mysql.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	d, err := mysql.Open(rawURL, mysql.Options{Prefix: opts.Prefix})
	if err != nil {
		return nil, fmt.Errorf("mysql lock: %w", err)
	}
	defer d.Close()
	if d.Galera() {
		return nil, fmt.Errorf("mysql lock: %s is a Galera cluster node (wsrep_on=ON): GET_LOCK holds only on the node that took it, "+
			"so processes on two nodes would both hold the lock; use the lease backend on the same database instead "+
			"(the URL with ?lease=1), which Galera's certification keeps to one holder across nodes: %w", cfg.Addr, ErrGalera)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout+30*time.Second)
	defer cancel()
	if err := migrate(ctx, d); err != nil {
		return nil, fmt.Errorf("mysql lock: migrate %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql lock: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetConnMaxIdleTime(time.Minute)
	var q mysqlQueries
	q.record, q.fence, q.busy = d.LockQueries()
	return &mysqlLocker{db: db, id: opts.ID, dbName: cfg.DBName, q: q}, nil
}

// key is the server-wide lock name. Named locks are not scoped to a
// database, so the database name keeps two applications on one server
// apart; names over MySQL's 64-character limit are hashed.
func (m *mysqlLocker) key(name string) string {
	k := "sluice:" + m.dbName + ":" + name
	if len(k) <= 64 {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "sluice:" + hex.EncodeToString(sum[:])[:57]
}

func (m *mysqlLocker) TryAcquire(ctx context.Context, name string, _ time.Duration) (Lease, Holder, error) {
	if err := CheckName(name); err != nil {
		return nil, Holder{}, err
	}
	key := m.key(name)
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("mysql lock %s: connect: %w", name, err)
	}
	// The holder may release between our GET_LOCK and the look-up of its
	// name; then the lock is simply tried again.
	for range 3 {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", key).Scan(&got); err != nil {
			discard(conn)
			return nil, Holder{}, fmt.Errorf("mysql lock %s: GET_LOCK: %w", name, err)
		}
		if got.Valid && got.Int64 == 1 {
			return m.record(ctx, conn, name, key)
		}
		var session sql.NullInt64
		var holder sql.NullString
		var since sql.NullTime
		if err := conn.QueryRowContext(ctx, m.q.busy, key, name).Scan(&session, &holder, &since); err != nil {
			discard(conn)
			return nil, Holder{}, fmt.Errorf("mysql lock %s: read holder: %w", name, err)
		}
		if !session.Valid {
			continue
		}
		conn.Close()
		if !holder.Valid {
			// Holding, but not through sluice, or between its GET_LOCK and its row.
			return nil, Holder{ID: fmt.Sprintf("mysql connection %d", session.Int64)}, nil
		}
		return nil, Holder{ID: holder.String, Since: since.Time}, nil
	}
	conn.Close()
	return nil, Holder{}, nil
}

func (m *mysqlLocker) record(ctx context.Context, conn *sql.Conn, name, key string) (Lease, Holder, error) {
	l := newMySQLLease(conn, name, key)
	err := func() error {
		if _, err := conn.ExecContext(ctx, m.q.record, name, m.id); err != nil {
			return err
		}
		return conn.QueryRowContext(ctx, m.q.fence, name).Scan(&l.fence)
	}()
	if err != nil {
		// Without its row the lock would have no fence; giving it up keeps
		// the promise that every holder has one.
		l.Release(context.WithoutCancel(ctx))
		return nil, Holder{}, fmt.Errorf("mysql lock %s: record holder: %w", name, err)
	}
	return l, Holder{}, nil
}

func (m *mysqlLocker) Close() error { return m.db.Close() }

type mysqlLease struct {
	sessionLease
	fence int64
}

func newMySQLLease(conn *sql.Conn, name, key string) *mysqlLease {
	return &mysqlLease{sessionLease: sessionLease{backend: "mysql", name: name, conn: conn,
		holds: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			var mine sql.NullInt64
			err := conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", key).Scan(&mine)
			return mine.Int64 == 1, err
		},
		unlock: func(ctx context.Context, conn *sql.Conn) (bool, error) {
			var n sql.NullInt64
			err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", key).Scan(&n)
			return n.Int64 == 1, err
		},
	}}
}

func (l *mysqlLease) Fence() int64 { return l.fence }
