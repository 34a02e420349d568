package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// The leader's chores prune audit entries past AuditRetention, by the
// database's clock: an entry moved 91 days back goes, one just written
// stays, and without a retention both stay.
func TestPurgeAllPrunesAuditPastRetention(t *testing.T) {
	ctx := context.Background()
	d, tg := testdb.OpenURL(t, "sqlite")
	for _, target := range []string{"job 1", "job 2"} {
		require.NoError(t, d.InsertAudit(ctx, driver.InsertAuditParams{Entry: sluicetype.AuditEntry{
			Actor: "ops", Source: sluicetype.AuditAPI, Address: "192.0.2.1", Action: "job.retry", Target: target, Affected: 1}}))
	}
	now, err := d.Now(ctx)
	require.NoError(t, err)
	old := now.Add(-91 * 24 * time.Hour).UTC().Format("2006-01-02 15:04:05.000") // SQLite's stored layout
	_, err = d.DB().ExecContext(ctx, "UPDATE "+tg.Prefix+"audit SET at = ? WHERE target = 'job 1'", old)
	require.NoError(t, err)

	clk := clock.NewManual(time.Now())
	New(Config{Driver: d, NodeID: "n", Clock: clk.Clock()}).PurgeAll(ctx)
	es, err := d.ListAudit(ctx, driver.ListAuditParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, es, 2, "no retention keeps every entry")

	New(Config{Driver: d, NodeID: "n", Clock: clk.Clock(), AuditRetention: 90 * 24 * time.Hour}).PurgeAll(ctx)
	es, err = d.ListAudit(ctx, driver.ListAuditParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "job 2", es[0].Target)
}
