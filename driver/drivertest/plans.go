package drivertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

// querier is what the SQL drivers expose for plan checks: their query
// texts and the listing's SQL.
type querier interface {
	Query(name string) string
	ListQuery(p driver.ListParams) (string, []any)
	BulkQueries(p driver.BulkParams) ([]string, [][]any, error)
}

// exercisePlans EXPLAINs the dashboard's and the CLI's count and listing
// queries, the idle workers' runnable probe and the hand-back of a failed
// claim, on a table that holds mostly finished rows, and fails on a full
// scan of the jobs table: those rows grow without bound, so every such
// query must go through an index.
func exercisePlans(t *testing.T, open Opener) {
	t.Run("NoFullScanOfJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		qd, ok := b.d.(querier)
		if !ok {
			t.Skipf("%s exposes no query texts", b.d.Name())
		}
		jobs := jobsTable(t, qd.Query("list"))
		fillForPlans(b, jobs)

		cases := map[string]driver.ListParams{
			"list":            {Limit: 50},
			"list page 2":     {Limit: 50, AfterID: 2000},
			"list pending":    {Status: driver.StatusPending, Limit: 50},
			"list processing": {Status: driver.StatusProcessing, Limit: 50},
			"list failed":     {Status: driver.StatusFailed, Limit: 50},
			"list success":    {Status: driver.StatusSuccess, Limit: 50, AfterID: 2000},
			"list cancelled":  {Status: driver.StatusCancelled, Limit: 50},
		}
		check := func(name, q string, args []any, ordered bool) {
			plan := explain(b, q, args)
			t.Logf("%s on %s:\n%s", name, b.d.Name(), strings.Join(plan, "\n"))
			require.False(t, fullScan(b.d.Name(), jobs, plan, ordered), "%s: full scan of %s:\n%s", name, jobs, strings.Join(plan, "\n"))
		}
		check("pending count (stats)", qd.Query("stats"), nil, false)
		// Workers hand back a claim after every failed one, usually for a
		// token that holds nothing: an index lookup, never a scan.
		check("release claim", qd.Query("release_claim"), []any{newToken()}, false)
		if _, ok := b.d.(driver.Prober); ok {
			// Idle workers run the probe many times a second.
			check("runnable probe", qd.Query("runnable"), []any{"default"}, false)
			check("runnable probe by type", qd.Query("runnable_type"), []any{"default", "noop"}, false)
		}
		// A bulk action's count and chunks read each status's index, so a
		// few failed jobs among many finished ones cost only themselves.
		// With a type filter, SQLite may walk the rowid table newest first
		// instead, which the LIMIT stops early.
		for _, a := range []string{driver.BulkRetry, driver.BulkCancel, driver.BulkDelete} {
			for _, typ := range []string{"", "plan"} {
				qs, args, err := qd.BulkQueries(driver.BulkParams{Action: a, Filter: driver.ListParams{Type: typ}})
				require.NoError(t, err)
				for i, q := range qs {
					check(fmt.Sprintf("bulk %s of type %q, part %d", a, typ, i), q, args[i], typ != "")
				}
			}
		}
		for name, p := range cases {
			q, args := qd.ListQuery(p)
			// An unfiltered listing walks the primary key newest first and
			// stops at LIMIT, which SQLite's plan shows as a table scan.
			check(name, q, args, p.Status == "")
		}
	})
}

// jobsTable finds the prefixed jobs table in the listing query.
func jobsTable(t *testing.T, list string) string {
	f := strings.Fields(list)
	for i, w := range f {
		if strings.EqualFold(w, "FROM") && i+1 < len(f) {
			return f[i+1]
		}
	}
	t.Fatalf("no FROM in %q", list)
	return ""
}

// fillForPlans makes 20,000 jobs, most of them finished, and refreshes the
// planner's statistics, so that plans are those of a long-running table.
func fillForPlans(b *bundle, jobs string) {
	ps := make([]driver.InsertJob, 500)
	for i := range ps {
		ps[i] = newJob("plan")
	}
	for range 40 {
		b.insert(ps...)
	}
	now := map[string]string{"sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now')", "mysql": "UTC_TIMESTAMP(6)", "postgres": "now()"}[b.d.Name()]
	for _, stmt := range []string{
		"UPDATE " + jobs + " SET status = 'success', finished_at = " + now + " WHERE id % 200 <> 0",
		"UPDATE " + jobs + " SET status = 'failed' WHERE id % 7 = 0 AND status = 'success'",
		"UPDATE " + jobs + " SET status = 'cancelled' WHERE id % 41 = 0 AND status = 'success'",
		"UPDATE " + jobs + " SET status = 'processing', finished_at = NULL, locked_by = 'x', locked_until = " + now + " WHERE id % 199 = 0",
	} {
		_, err := b.d.DB().ExecContext(b.ctx, stmt)
		require.NoError(b.t, err, stmt)
	}
	analyze := map[string]string{"sqlite": "ANALYZE", "mysql": "ANALYZE TABLE " + jobs, "postgres": "ANALYZE " + jobs}[b.d.Name()]
	rows, err := b.d.DB().QueryContext(b.ctx, analyze)
	require.NoError(b.t, err)
	rows.Close()
}

// explain returns the plan as one line per node.
func explain(b *bundle, q string, args []any) []string {
	prefix := map[string]string{"sqlite": "EXPLAIN QUERY PLAN ", "mysql": "EXPLAIN ", "postgres": "EXPLAIN "}[b.d.Name()]
	rows, err := b.d.DB().QueryContext(b.ctx, prefix+q, args...)
	require.NoError(b.t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(b.t, err)
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(b.t, rows.Scan(ptrs...))
		var parts []string
		for i, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			parts = append(parts, fmt.Sprintf("%s=%v", cols[i], v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	require.NoError(b.t, rows.Err())
	return out
}

// fullScan reads a plan for a scan of the whole jobs table. ordered allows
// SQLite's walk of the rowid table in id order (a LIMIT stops it early).
func fullScan(name, jobs string, plan []string, ordered bool) bool {
	for _, line := range plan {
		switch name {
		case "sqlite":
			if strings.HasSuffix(line, "detail=SCAN "+jobs) && !ordered {
				return true
			}
		case "mysql":
			if strings.Contains(line, "table="+jobs+" ") && strings.Contains(line, " type=ALL ") {
				return true
			}
		case "postgres":
			if strings.Contains(line, "Seq Scan on "+jobs) {
				return true
			}
		}
	}
	return false
}
