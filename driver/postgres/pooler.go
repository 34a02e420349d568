package postgres

import (
	"context"
	"encoding/binary"
	"net"
	"sync"

	"github.com/jackc/pgx/v5"
)

// cancelRequestCode opens a CancelRequest message, the whole of what a
// cancel connection sends (PostgreSQL protocol, "Canceling Requests").
const cancelRequestCode = 80877102

// dropCancelRequests keeps pgx from sending cancel requests through a
// pooler. pgx sends one whenever a query's context ends while it runs, as
// every in-flight claim's does at shutdown, and then the process exits with
// the cancel connection still open. PgBouncer before 1.20 (1.18 is Debian
// 12's) can crash on exactly that race, "disconnect_client(): bad client
// state: 0" (pgbouncer#801), taking every client's connections with it.
// Dropping the request costs little: pgx closes the query's connection
// anyway, the pooler then closes its server session, and sluice's
// statements are short. Only a plaintext cancel can be recognised here; a
// TLS one is encrypted above the dialled connection.
func dropCancelRequests(cfg *pgx.ConnConfig) {
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &noCancelConn{Conn: c}, nil
	}
}

// noCancelConn swallows a CancelRequest sent as a connection's first write.
type noCancelConn struct {
	net.Conn
	once    sync.Once
	dropped bool
}

func (c *noCancelConn) Write(b []byte) (int, error) {
	c.once.Do(func() {
		c.dropped = len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == cancelRequestCode &&
			int(binary.BigEndian.Uint32(b[0:4])) == len(b)
	})
	if c.dropped {
		// Closing makes pgx's wait for the acknowledgement return at once.
		c.Conn.Close()
		return len(b), nil
	}
	return c.Conn.Write(b)
}
