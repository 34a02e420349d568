package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/driver"
)

var _ driver.Listener = (*Driver)(nil)

// Listen holds one dedicated connection that LISTENs on the jobs channel
// (filled by the insert trigger of migration 2) and calls wake with each
// notified queue. A dropped connection is re-established with backoff;
// workers poll meanwhile, so nothing is lost, only latency.
func (d *Driver) Listen(ctx context.Context, wake func(queue string), log *slog.Logger) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		log.Warn("postgres LISTEN connection lost; workers poll until it is back", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func (d *Driver) listenOnce(ctx context.Context, wake func(string)) error {
	conn, err := pgx.ConnectConfig(ctx, d.connConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel}.Sanitize()); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		wake(n.Payload)
	}
}
