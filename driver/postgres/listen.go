package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
)

var _ driver.Listener = (*Driver)(nil)

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
func (d *Driver) Listen(ctx context.Context, wake func(queue string), log *slog.Logger) {
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
func (d *Driver) listenOnce(ctx context.Context, wake func(string)) (bool, error) {
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
	wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		wake(n.Payload)
	}
}
