package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// ExerciseUpgrade migrates tables at version from, the last before the
// type settings (issue 24), to the newest, on rows that version accepted,
// as an upgrade meets them. d is a driver on fresh tables, not migrated,
// whose jobs table is named table, and migrateTo applies its migrations up
// to a version. The rows include
// what the newer schema refuses at insert (a payload that is not a JSON
// object): they stay, and run.
func ExerciseUpgrade(t *testing.T, d driver.Driver, table string, from int, migrateTo func(ctx context.Context, version int) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, latest, err := d.SchemaVersion(ctx)
	require.NoError(t, err)
	require.NoError(t, migrateTo(ctx, from))
	b := &bundle{t: t, ctx: ctx, d: d}

	// The rows of the version before are written by plain SQL: the
	// driver's Insert writes the newest schema's columns (deadline).
	plain, err := b.sqlInsert(d.DB(), table, "type", "'plain'")
	require.NoError(t, err)
	held, err := b.sqlInsert(d.DB(), table, "type, business_key, dedupe", "'keyed', 'upgrade:1', 'permanent'")
	require.NoError(t, err)
	legacy, err := b.sqlInsert(d.DB(), table, "type, payload", "'legacy', '[1,2]'")
	require.NoError(t, err, "the version before accepts an array payload")
	// The newest job is deleted (purged): its id must not come back.
	gone, err := b.sqlInsert(d.DB(), table, "type", "'gone'")
	require.NoError(t, err)
	_, err = d.DB().ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, gone))
	require.NoError(t, err)

	m, err := d.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, driver.MigrateResult{From: from, To: latest}, m)

	old := b.get(legacy)
	require.JSONEq(t, `[1,2]`, string(old.Payload), "rows are kept as they were")
	require.Equal(t, "default", old.Queue)
	require.Equal(t, 5, old.MaxAttempts)
	require.Equal(t, sluicetype.DedupePermanent, old.Dedupe)
	b.requireDuplicate(keyed("keyed", "upgrade:1", sluicetype.DedupePermanent), held, "the key is still taken")

	// Every old job, the legacy one too, is claimed and finished.
	jobs := b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute})
	require.ElementsMatch(t, []int64{plain, held, legacy}, ids(jobs))
	for _, j := range jobs {
		require.Empty(t, b.complete(driver.Completion{ID: j.ID, Token: j.LockedBy, Status: sluicetype.StatusSuccess}))
	}
	require.Equal(t, sluicetype.StatusSuccess, b.get(legacy).Status)

	next := b.insertOne(newJob("after"))
	require.Greater(t, next, gone, "ids go on after the purged job's")
	_, err = b.sqlInsert(d.DB(), table, "type, payload", "'legacy', '[1,2]'")
	require.ErrorContains(t, err, "payload", "the upgraded table refuses a new array payload")
}
