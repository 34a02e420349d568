package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/driver/sqlite"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestPlainClaimSortsNothing: the claims of a queue that is neither fair
// nor limited merge their two index ranges in claim order. A temporary
// B-tree anywhere in the plan means SQLite copies and sorts rows on every
// claim, which a queue without partitions used not to pay.
func TestPlainClaimSortsNothing(t *testing.T) {
	d := testdb.Open(t, "sqlite").(*sqlite.Driver)
	ctx := context.Background()
	for name, types := range map[string][]string{"claim": nil, "claim of one type": {"noop"}} {
		args := append([]any{"token", "+60.000 seconds", "default", 10}, sqldriver.Args(types)...)
		rows, err := d.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlite.ClaimQuery(d, types), args...)
		require.NoError(t, err, name)
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", name, text)
		require.Contains(t, text, "MERGE (UNION ALL)", "%s does not merge its index ranges:\n%s", name, text)
		require.NotContains(t, text, "TEMP B-TREE", "%s sorts:\n%s", name, text)
	}
}

// TestClaimAfterSchemaRebuilt: the plain claims are prepared once per
// driver; one prepared before the tables were dropped and made again still
// claims from the new tables.
func TestClaimAfterSchemaRebuilt(t *testing.T) {
	d, tg := testdb.OpenURL(t, "sqlite")
	ctx := context.Background()
	claim := func(typ string) []sluicetype.JobRow {
		t.Helper()
		var types []string
		if typ != "" {
			types = []string{typ}
		}
		jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: types, Limit: 10, Lease: time.Minute, Token: "t-" + typ})
		require.NoError(t, err)
		return jobs
	}
	insert := func() int64 {
		t.Helper()
		res, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{
			{Queue: "default", Type: "noop", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 3},
		}})
		require.NoError(t, err)
		return res[0].ID
	}
	insert()
	require.Len(t, claim(""), 1)
	insert()
	require.Len(t, claim("noop"), 1)

	require.NoError(t, d.DropTables(ctx, driver.DropTablesParams{Prefix: tg.Prefix}))
	_, err := d.Migrate(ctx)
	require.NoError(t, err)
	for _, typ := range []string{"", "noop"} {
		id := insert()
		jobs := claim(typ)
		require.Len(t, jobs, 1)
		require.Equal(t, id, jobs[0].ID)
	}
}
