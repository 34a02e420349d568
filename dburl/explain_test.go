package dburl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// Issue 24 item 13: behind PgBouncer in transaction mode without
// ?pooler=transaction, pgx's statement cache meets a session where its
// statement already exists: SQLSTATE 42P05. The server's own error for
// that (a statement prepared twice on one session) gets the fix; any
// other error is left as it is.
func TestExplainPreparedStatementExists(t *testing.T) {
	d := testdb.Open(t, "postgres")
	ctx := context.Background()
	conn, err := d.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `PREPARE stmtcache_sluice_test AS SELECT 1`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `PREPARE stmtcache_sluice_test AS SELECT 1`)
	require.Error(t, err)
	explained := dburl.Explain(err)
	require.ErrorIs(t, explained, err)
	require.ErrorContains(t, explained, `prepared statement "stmtcache_sluice_test" already exists (SQLSTATE 42P05): `+
		`the database URL leads to a transaction pooler such as PgBouncer; add ?pooler=transaction to it`)

	other := errors.New("connection refused")
	require.Equal(t, other, dburl.Explain(other))
}
