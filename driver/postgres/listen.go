package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenCheckWait bounds the wait for the check notification of a
// separate listen URL; a server answers in milliseconds.
const listenCheckWait = 5 * time.Second

// Reconnection pacing of the LISTEN connection. The cap is low because
// the connection is lost mostly when the server is: restarted, or failed
// over to a replica (Patroni), where the new primary accepts connections
// after some seconds; a cap of many seconds would leave workers deaf that
// long after it does. One failed connection attempt a second per process
// costs a down server nothing it notices.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = time.Second
)

// Listen holds one dedicated connection that LISTENs on the jobs channel
// (filled by the insert trigger of migration 2) and calls wake with each
// notified queue. A dropped connection is re-established with backoff;
// workers poll meanwhile, so nothing is lost, only latency. Each time
// LISTEN is in place, wake("") tells every queue to claim once: a job
// inserted while no connection listened was announced to nobody.
func (d listening) Listen(ctx context.Context, wake func(queue string), log *slog.Logger) {
	wait := listenRetryMin
	for ctx.Err() == nil {
		listened, err := d.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if listened {
			// The connection worked until now: a fresh loss, not the
			// latest of a run of failed attempts.
			wait = listenRetryMin
		}
		log.Warn("postgres LISTEN connection lost; workers poll until it is back", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, listenRetryMax)
	}
}

// listenOnce listens until the connection fails, and reports whether
// LISTEN was in place before it did.
func (d listening) listenOnce(ctx context.Context, wake func(string)) (bool, error) {
	// connConfig carries every host of a multi-host URL and its
	// target_session_attrs check, so after a failover this connects to
	// the new primary, as the pool does.
	conn, err := pgx.ConnectConfig(ctx, d.connConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel}.Sanitize()); err != nil {
		return false, err
	}
	if d.separate {
		if err := d.checkListen(ctx, conn); err != nil {
			return false, err
		}
	}
	wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Channel == d.channel {
			wake(n.Payload)
		}
	}
}

// checkListen proves that a separate listen URL reaches the database the
// jobs are written to: it sends a notification through the database URL
// and waits for it on conn. A listen URL naming another server or database
// would otherwise pass every check and deliver no wake-up, ever.
func (d listening) checkListen(ctx context.Context, conn *pgx.Conn) error {
	check := d.channel + "_check"
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{check}.Sanitize()); err != nil {
		return err
	}
	// A random token, so that a check of another process on the same
	// channel is never taken for this one's.
	token := rand.Text()
	if _, err := d.Write.ExecContext(ctx, "SELECT pg_notify($1, $2)", check, token); err != nil {
		return fmt.Errorf("send the listen check: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, listenCheckWait)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(wctx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("the listen URL (%s:%d database %q) got no notification sent through the database URL within %v: it must reach the same database",
				d.connConfig.Host, d.connConfig.Port, d.connConfig.Database, listenCheckWait)
		}
		if err != nil {
			return err
		}
		if n.Channel == check && n.Payload == token {
			_, err := conn.Exec(ctx, "UNLISTEN "+pgx.Identifier{check}.Sanitize())
			return err
		}
	}
}
