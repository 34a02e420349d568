package drivertest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Querier is what the SQL drivers expose for plan checks: their query
// texts and the listing's SQL. Every driver given to Exercise must
// implement it (drivers_test.go asserts it of the three at compile time),
// so that the index checks below cannot quietly drop out.
type Querier interface {
	Queries() *sqldriver.Queries
	ListQuery(p sluicetype.ListParams) (string, []any)
	// Bind numbers the ? of the fair claim's query texts.
	Bind(q string, n int) string
	BulkQueries(p driver.BulkParams) ([]string, [][]any, error)
}

// exercisePlans EXPLAINs the dashboard's and the CLI's count and listing
// queries, the idle workers' runnable probe and the hand-back of a failed
// claim, on a table that holds mostly finished rows, and fails on a full
// scan of the jobs table: those rows grow without bound, so every such
// query must go through an index. The claims, the runnable probe and the
// counts of pending and running jobs must moreover read through the
// indexes pendingIndexes names, and a read in claim order must not sort
// what it reads.
func exercisePlans(t *testing.T, open Opener) {
	t.Run("NoFullScanOfJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		qd, ok := b.d.(Querier)
		if !ok {
			t.Fatalf("%s exposes no query texts (drivertest.Querier): its plans cannot be checked", b.d.Name())
		}
		qs := qd.Queries()
		// The claims' and probes' type filter, as the drivers expand it.
		types := func(q string, first int, types ...string) string {
			return sqldriver.TypeFilter(q, first, types, b.d.Dialect().Placeholder)
		}
		jobs := jobsTable(t, qs.List)
		fillForPlans(b, jobs)

		cases := map[string]sluicetype.ListParams{
			"list":             {Limit: 50},
			"list page 2":      {Limit: 50, AfterID: 2000},
			"list pending":     {Status: sluicetype.StatusPending, Limit: 50},
			"list processing":  {Status: sluicetype.StatusProcessing, Limit: 50},
			"list failed":      {Status: sluicetype.StatusFailed, Limit: 50},
			"list success":     {Status: sluicetype.StatusSuccess, Limit: 50, AfterID: 2000},
			"list failed deep": {Status: sluicetype.StatusFailed, Limit: 50, AfterID: 10000},
			"list cancelled":   {Status: sluicetype.StatusCancelled, Limit: 50},
		}
		check := func(name, q string, args []any, ordered bool) []string {
			plan := explain(b, q, args)
			t.Logf("%s on %s:\n%s", name, b.d.Name(), strings.Join(plan, "\n"))
			require.False(t, fullScan(b.d.Name(), jobs, plan, ordered), "%s: full scan of %s:\n%s", name, jobs, strings.Join(plan, "\n"))
			return plan
		}
		idx := pendingIndexes(b.d.Name(), jobs)
		// through requires every read of the jobs table in plan to go
		// through one of want (or also), each of want at least once, and,
		// for a read in claim order, no sort of the rows it reads: the
		// index's order is the claim's, so a sort would read a whole
		// backlog (or a whole partition) to return its head.
		through := func(name string, plan []string, ordered bool, want []string, also ...string) {
			reads := planReads(b.d.Name(), jobs, plan)
			require.NotEmpty(t, reads, "%s: no read of %s in the plan", name, jobs)
			seen := map[string]bool{}
			for _, r := range reads {
				require.Contains(t, append(slices.Clone(want), also...), r.index, "%s reads %s through another index:\n%s", name, jobs, strings.Join(plan, "\n"))
				require.False(t, ordered && r.sorted, "%s sorts the rows it reads through %s:\n%s", name, r.index, strings.Join(plan, "\n"))
				seen[r.index] = true
			}
			for _, w := range want {
				require.True(t, seen[w], "%s does not read %s:\n%s", name, w, strings.Join(plan, "\n"))
			}
		}
		if idx.probe != nil {
			through("pending count (stats)", check("pending count (stats)", qs.Stats, nil, false), false, idx.probe, idx.running, jobs+"_failed")
		} else {
			check("pending count (stats)", qs.Stats, nil, false)
		}
		// Workers hand back a claim after every failed one, usually for a
		// token that holds nothing: an index lookup, never a scan.
		check("release claim", qs.ReleaseClaim, []any{newToken()}, false)
		if _, ok := b.d.(driver.Prober); ok {
			// Idle workers run the probe many times a second.
			for name, probe := range map[string]struct {
				q    string
				args []any
			}{
				"runnable":         {types(qs.Runnable, 2), []any{"default"}},
				"runnable of type": {types(qs.Runnable, 2, "noop"), []any{"default", "noop"}},
			} {
				plan := check(name+" probe", probe.q, probe.args, false)
				if idx.probe != nil {
					through(name+" probe", plan, false, idx.probe)
				}
			}
		}
		// A bulk action's count and chunks read each status's index, so a
		// few failed jobs among many finished ones cost only themselves.
		// With a type filter, SQLite may walk the rowid table newest first
		// instead, which the LIMIT stops early.
		for _, a := range []string{sluicetype.BulkRetry, sluicetype.BulkCancel, sluicetype.BulkDelete} {
			for _, typ := range []string{"", "plan"} {
				qs, args, err := qd.BulkQueries(driver.BulkParams{Action: a, Filter: sluicetype.ListParams{Type: typ}})
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
			plan := check(name, q, args, p.Status == "")
			if p.Status != "" && p.AfterID > 0 {
				// A later page of one status starts in the index at the
				// page: an index read by status alone would read, and
				// filter, every row of the status newer than the page.
				require.True(t, seeksPage(b.d.Name(), jobs, plan), "%s: the page's id bound is not an index condition:\n%s", name, strings.Join(plan, "\n"))
			}
		}
		// The fair and limited claim, on a fair queue whose partition A
		// holds most of the backlog: each statement is a seek per
		// partition or a range bounded by the claim's size. The backlog
		// comes last, as it changes what the counts above should plan.
		fillFairBacklog(b, jobs)
		bind := qd.Bind
		part := []string{idx.partition}
		through("fair partitions", check("fair partitions", bind(qs.FairParts, 0), []any{"fair", "", "fair", driver.MaxFairPartitions}, false), false, part)
		through("fair partitions from the first", check("fair partitions from the first", bind(qs.FairPartsFirst, 0), []any{"fair", "fair", driver.MaxFairPartitions}, false), false, part)
		branch := strings.Replace(qs.ClaimPickPart, "/*FILTER*/", "", 1)
		through("fair pick", check("fair pick", qd.Bind(branch+"\nUNION ALL\n"+branch, 0), []any{"fair", "A", 10, "fair", "p3", 10}, false), true, part)
		// ClaimPick repeats the queue and the LIMIT per branch, and a
		// merge of branches ends with a LIMIT of its own (sqldriver's
		// pickQuery).
		pick := qs.ClaimPick
		var pickArgs []any
		for range strings.Count(pick, "/*FILTER*/") {
			pickArgs = append(pickArgs, "default", 10)
		}
		if len(pickArgs) > 2 {
			pickArgs = append(pickArgs, 10)
		}
		plan := check("limited pick", qd.Bind(strings.ReplaceAll(pick, "/*FILTER*/", ""), 0), pickArgs, false)
		if idx.order != nil {
			through("limited pick", plan, true, idx.order)
			// The single-statement claims read the same merge, then update
			// the rows they picked by primary key.
			for name, claim := range map[string]struct {
				q    string
				args []any
			}{
				"claim":         {types(qs.Claim, 5), []any{newToken(), int64(time.Minute / time.Microsecond), "default", 10}},
				"claim of type": {types(qs.Claim, 5, "plan"), []any{newToken(), int64(time.Minute / time.Microsecond), "default", 10, "plan"}},
			} {
				through(name, check(name, claim.q, claim.args, false), true, idx.order, idx.primary)
			}
		}
		plan = check("running by partition", bind(qs.RunningParts, 2), []any{"fair", "A", "p3"}, false)
		through("running by partition", plan, false, []string{idx.running})
		plan = check("running in queue", bind(qs.RunningQueue, 0), []any{"fair"}, false)
		if idx.order != nil {
			through("running in queue", plan, false, []string{idx.running})
		}
		plan = check("partition stats", bind(qs.PartitionStats, 0), []any{10}, false)
		through("partition stats", plan, false, idx.stats)
		check("running by type", bind(qs.RunningTypes, 1), []any{"plan"}, false)
	})
}

// planIndexes are the indexes the claim's reads must go through.
type planIndexes struct {
	partition string   // one partition's pending jobs in claim order
	running   string   // the running jobs, counted per partition
	stats     []string // partition stats reads each of these
	primary   string   // the primary key, as plans name it
	// order, read in the queue's global order by the claims (nil: not
	// checked) and probe, read by the runnable probes and the pending
	// count (nil: not checked).
	order, probe []string
}

// pendingIndexes names the indexes of pending and running jobs per database.
// PostgreSQL and SQLite keep one partial index of pending jobs by
// partition, which serves the jobs without one (the partition "") in
// claim order, and one of the pending jobs with a partition in claim
// order; claims in global order merge the two. MySQL, which has no partial
// indexes, keeps sluice_jobs_fair over pending and running jobs.
func pendingIndexes(name, jobs string) planIndexes {
	if name == "mysql" {
		return planIndexes{partition: jobs + "_fair", running: jobs + "_fair", stats: []string{jobs + "_fair"}}
	}
	pk := "PRIMARY KEY"
	if name == "postgres" {
		pk = jobs + "_pkey"
	}
	return planIndexes{
		partition: jobs + "_pending",
		running:   jobs + "_rescue",
		stats:     []string{jobs + "_pending", jobs + "_rescue"},
		primary:   pk,
		order:     []string{jobs + "_pending", jobs + "_partitioned_pending"},
		probe:     []string{jobs + "_pending"},
	}
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
	ps := newJobs("plan", 500)
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
	analyze(b, jobs)
}

// analyze refreshes the planner's statistics of the jobs table.
func analyze(b *bundle, jobs string) {
	q := map[string]string{"sqlite": "ANALYZE", "mysql": "ANALYZE TABLE " + jobs, "postgres": "ANALYZE " + jobs}[b.d.Name()]
	rows, err := b.d.DB().QueryContext(b.ctx, q)
	require.NoError(b.t, err)
	rows.Close()
}

// fillFairBacklog adds a fair queue's backlog: 2,000 pending jobs, three
// quarters of them partition A's, the rest spread over 40 partitions.
func fillFairBacklog(b *bundle, jobs string) {
	ps := make([]driver.InsertJob, 0, 2000)
	for i := range 2000 {
		p := newJob("plan")
		p.Queue, p.Partition = "fair", "A"
		if i%4 == 0 {
			p.Partition = fmt.Sprintf("p%d", i%40)
		}
		ps = append(ps, p)
	}
	b.insert(ps...)
	analyze(b, jobs)
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

// seeksPage reads a plan for an index read of the jobs table bounded by
// the page's "id < ?": MySQL's range over (status, id), not a ref by
// status; an index condition on id in PostgreSQL's and SQLite's.
func seeksPage(name, jobs string, plan []string) bool {
	for _, line := range plan {
		switch name {
		case "sqlite":
			if strings.Contains(line, "SEARCH "+jobs+" USING") && strings.Contains(line, "id<?") {
				return true
			}
		case "mysql":
			if strings.Contains(line, "table="+jobs+" ") && strings.Contains(line, " type=range ") && strings.Contains(line, " key="+jobs+"_status_id ") {
				return true
			}
		case "postgres":
			if strings.Contains(line, "Index Cond:") && strings.Contains(line, "(id < ") {
				return true
			}
		}
	}
	return false
}
