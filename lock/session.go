package lock

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// sessionLease is a lock that one database session holds (MySQL's
// GET_LOCK, a PostgreSQL advisory lock): it lasts as long as the session,
// which this lease keeps on a connection of its own.
type sessionLease struct {
	backend, name string
	// holds asks the session whether it still holds the lock; unlock gives
	// it up and reports whether the session still held it.
	holds, unlock func(ctx context.Context, conn *sql.Conn) (bool, error)

	mu   sync.Mutex
	conn *sql.Conn // nil once released
}

// Renew checks that our session still holds the lock. A session that
// cannot answer is counted lost: even if the server still keeps it, this
// process can no longer release or check it.
func (l *sessionLease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fmt.Errorf("%s lock %s: %w: already released", l.backend, l.name, ErrLost)
	}
	qctx, cancel := sessionCtx(ctx)
	defer cancel()
	held, err := l.holds(qctx, l.conn)
	if err != nil {
		return fmt.Errorf("%s lock %s: %w: its connection failed: %w", l.backend, l.name, ErrLost, err)
	}
	if !held {
		return fmt.Errorf("%s lock %s: %w: the session no longer holds it", l.backend, l.name, ErrLost)
	}
	return nil
}

func (l *sessionLease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	conn := l.conn
	l.conn = nil
	held, err := l.unlock(ctx, conn)
	if err != nil {
		// Closing the session frees the lock on the server anyway.
		discard(conn)
		return fmt.Errorf("%s lock %s: release: %w", l.backend, l.name, err)
	}
	if !held {
		discard(conn)
		return fmt.Errorf("%s lock %s: %w before release: the session no longer held it", l.backend, l.name, ErrLost)
	}
	conn.Close()
	return nil
}
