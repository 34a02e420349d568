package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseAudit(t *testing.T, open Opener) {
	t.Run("InsertListNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		before := b.now()
		want := []sluicetype.AuditEntry{
			{Actor: "ops", Source: sluicetype.AuditAPI, Address: "192.0.2.7", Action: "job.retry", Target: "job 42", Affected: 1},
			{Actor: "cli:root", Source: sluicetype.AuditCLI, Address: "worker-1", Action: "queue.pause", Target: "queue mail", Affected: 1},
			// Text a database might mangle comes back as written.
			{Actor: "ünï\x1b[31m<b>", Source: sluicetype.AuditDashboard, Address: "::1", Action: "jobs.cancel", Target: "status=failed type=mail 'quoted'", Affected: 1234},
		}
		for _, e := range want {
			require.NoError(t, b.d.InsertAudit(b.ctx, driver.InsertAuditParams{Entry: e}))
		}
		got, err := b.d.ListAudit(b.ctx, driver.ListAuditParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i, g := range got {
			w := want[len(want)-1-i]
			require.Equal(t, w.Actor, g.Actor)
			require.Equal(t, w.Source, g.Source)
			require.Equal(t, w.Address, g.Address)
			require.Equal(t, w.Action, g.Action)
			require.Equal(t, w.Target, g.Target)
			require.Equal(t, w.Affected, g.Affected)
			requireBetween(t, g.At, before, b.now(), "audit entry's at")
			if i > 0 {
				require.Less(t, g.ID, got[i-1].ID, "newest first")
			}
		}
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for i := range 6 {
			actor := []string{"ops", "cli:alice"}[i%2]
			action := []string{"job.retry", "job.cancel", "queue.pause"}[i%3]
			require.NoError(t, b.d.InsertAudit(b.ctx, driver.InsertAuditParams{Entry: sluicetype.AuditEntry{
				Actor: actor, Source: "api", Address: "a", Action: action, Target: fmt.Sprintf("job %d", i), Affected: 1}}))
		}
		list := func(p driver.ListAuditParams) []string {
			t.Helper()
			if p.Limit == 0 {
				p.Limit = 100
			}
			es, err := b.d.ListAudit(b.ctx, p)
			require.NoError(t, err)
			var out []string
			for _, e := range es {
				out = append(out, e.Target)
			}
			return out
		}
		require.Equal(t, []string{"job 4", "job 2", "job 0"}, list(driver.ListAuditParams{Actor: "ops"}))
		require.Equal(t, []string{"job 3", "job 0"}, list(driver.ListAuditParams{Action: "job.retry"}))
		require.Equal(t, []string{"job 3"}, list(driver.ListAuditParams{Actor: "cli:alice", Action: "job.retry"}))
		require.Equal(t, []string{"job 5", "job 4"}, list(driver.ListAuditParams{Limit: 2}))

		// Paging by id: the next page starts below the last id read.
		all, err := b.d.ListAudit(b.ctx, driver.ListAuditParams{Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"job 3", "job 2"}, list(driver.ListAuditParams{Limit: 2, BeforeID: all[1].ID}))

		require.Len(t, list(driver.ListAuditParams{Since: b.now().Add(-time.Hour)}), 6)
		require.Empty(t, list(driver.ListAuditParams{Since: b.now().Add(time.Hour)}))

		_, err = b.d.ListAudit(b.ctx, driver.ListAuditParams{})
		require.Error(t, err, "a list without a limit")
	})

	t.Run("PruneByDatabaseTime", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, target := range []string{"old", "young"} {
			require.NoError(t, b.d.InsertAudit(b.ctx, driver.InsertAuditParams{Entry: sluicetype.AuditEntry{
				Actor: "ops", Source: "api", Address: "a", Action: "job.retry", Target: target, Affected: 1}}))
		}
		es, err := b.d.ListAudit(b.ctx, driver.ListAuditParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, es, 2)
		// The old entry is moved 100 days into the database's past, as if
		// it had been written then: no test waits out a retention.
		b.moveAudit(es[1].ID, b.now().Add(-100*24*time.Hour))

		n, err := b.d.PruneAudit(b.ctx, driver.PruneAuditParams{OlderThan: 90 * 24 * time.Hour})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		es, err = b.d.ListAudit(b.ctx, driver.ListAuditParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, es, 1)
		require.Equal(t, "young", es[0].Target)

		n, err = b.d.PruneAudit(b.ctx, driver.PruneAuditParams{OlderThan: 90 * 24 * time.Hour})
		require.NoError(t, err)
		require.Zero(t, n, "a second prune finds nothing old")
	})
}

// moveAudit sets the stored time of an audit entry.
func (b *bundle) moveAudit(id int64, at time.Time) {
	b.t.Helper()
	var v any
	switch b.d.Name() {
	case "sqlite":
		v = at.UTC().Format(sqldriver.TextTimeLayout)
	case "mysql":
		v = at.UTC()
	case "postgres":
		v = at
	default:
		b.t.Fatalf("no stored time encoding for driver %s", b.d.Name())
	}
	table := strings.TrimSuffix(b.jobsTable(), "jobs") + "audit"
	ph := b.d.Dialect().Placeholder
	res, err := b.d.DB().ExecContext(b.ctx, "UPDATE "+table+" SET at = "+ph(1)+" WHERE id = "+ph(2), v, id)
	require.NoError(b.t, err)
	n, err := res.RowsAffected()
	require.NoError(b.t, err)
	require.EqualValues(b.t, 1, n, "audit entry %d", id)
}
