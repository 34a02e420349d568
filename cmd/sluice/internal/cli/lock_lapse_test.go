//go:build unix

package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
)

// A holder whose renewals stop getting through (here they wait on a row
// lock the test holds on the lease's row, as they would on a stalled
// database) gives up while the lease is still live, and its CMD is gone
// before the lease could pass to another holder: checked against the real
// row's expires_at, in database time, while the renewals are still held
// back.
func TestLockStopsCMDBeforeTheLeaseCanPassOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ backend, lockRow, live string }{
		{"postgres-lease", "SELECT 1 FROM %sleases WHERE name = $1 FOR UPDATE", "SELECT expires_at > clock_timestamp() FROM %sleases WHERE name = $1"},
		{"mysql-lease", "SELECT 1 FROM %sleases WHERE name = ? FOR UPDATE", "SELECT expires_at > UTC_TIMESTAMP(6) FROM %sleases WHERE name = ?"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			lt := newLockTarget(t, tc.backend)
			name := lockName()
			// --kill-after 500ms makes the stop margin 1.5 s of the 3 s ttl.
			h := hold(t, lt, name, "30", "--ttl", "3s", "--kill-after", "500ms")
			cmdPid, _, _ := h.report(t)
			u, _, _ := strings.Cut(lt.URL, "?")
			d, err := dburl.Open(u, dburl.Options{Prefix: lt.Prefix})
			require.NoError(t, err)
			defer d.Close()
			ctx := context.Background()
			tx, err := d.DB().BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			row := "lock:" + name // lock.leaseNamePrefix
			_, err = tx.ExecContext(ctx, fmt.Sprintf(tc.lockRow, lt.Prefix), row)
			require.NoError(t, err)
			start := time.Now()
			waitFor(t, 10*time.Second, func() bool { return processGone(cmdPid) }, "CMD still runs with its renewals held back")
			var live bool
			require.NoError(t, tx.QueryRowContext(ctx, fmt.Sprintf(tc.live, lt.Prefix), row).Scan(&live))
			require.True(t, live, "CMD outlived the lease (stopped %s after the renewals were held back): another holder could have started", time.Since(start))
			require.NoError(t, tx.Rollback())
			require.Equal(t, 1, h.wait(t, 10*time.Second), h.Stderr())
			require.Contains(t, h.Stderr(), "lock lost")
			t.Logf("%s: CMD stopped %s after the renewals were held back, the lease still live", tc.backend, time.Since(start).Round(time.Millisecond))
		})
	}
}
