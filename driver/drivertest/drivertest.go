// Package drivertest is the conformance suite that every sluice driver must
// pass. A driver's test calls Exercise with a function that opens a fresh,
// migrated driver with empty tables:
//
//	func TestSQLite(t *testing.T) {
//		drivertest.Exercise(t, func(t *testing.T) driver.Driver { return testdb.Open(t, "sqlite") })
//	}
//
// Each case opens its own driver, so cases that look at the whole table
// (Stats, Rescue, Purge, ListJobs) never see another case's rows, and cases
// run in parallel. The suite is split by area, one file each.
package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Opener returns a fresh migrated driver with empty tables, closed when t ends.
type Opener func(t *testing.T) driver.Driver

// areas are the conformance suite's parts, run side by side.
var areas = []struct {
	name string
	run  func(*testing.T, Opener)
}{
	{"Schema", exerciseSchema},
	{"Insert", exerciseInsert},
	{"Dedupe", exerciseDedupe},
	{"Claim", exerciseClaim},
	{"Fair", exerciseFair},
	{"Probe", exerciseProbe},
	{"Complete", exerciseComplete},
	{"History", exerciseHistory},
	{"Fencing", exerciseFencing},
	{"Cancel", exerciseCancel},
	{"Rescue", exerciseRescue},
	{"Release", exerciseRelease},
	{"Prefetch", exercisePrefetch},
	{"Admin", exerciseAdmin},
	{"Purge", exercisePurge},
	{"List", exerciseList},
	{"Stats", exerciseStats},
	{"Gauges", exerciseGauges},
	{"Lease", exerciseLease},
	{"Schedule", exerciseSchedule},
	{"Concurrency", exerciseConcurrency},
	{"Bulk", exerciseBulk},
	{"BulkActions", exerciseBulkActions},
	{"Observe", exerciseObserve},
	{"Latency", exerciseLatency},
	{"Checkpoint", exerciseCheckpoint},
	{"Drop", exerciseDrop},
	{"Plans", exercisePlans},
	{"Limits", exerciseLimits},
	{"ClaimRates", exerciseClaimRates},
	{"Types", exerciseTypes},
	{"Bench", exerciseBench},
	{"Catalogue", exerciseCatalogue},
	{"Audit", exerciseAudit},
	{"Deadline", exerciseDeadline},
	{"AttemptLogs", exerciseAttemptLogs},
	{"Progress", exerciseProgress},
	{"Stuck", exerciseStuck},
}

// claimAreas are the areas whose cases claim jobs and then work with
// what the claim wrote (completion, fencing, leases, rescue, hand-back,
// the probe that must agree with it, and the claim's plans): the ones a
// second claim path of the same driver must pass.
var claimAreas = map[string]bool{"Claim": true, "Fair": true, "Probe": true, "Complete": true, "Fencing": true,
	"Rescue": true, "Release": true, "Prefetch": true, "Lease": true, "Concurrency": true, "Plans": true, "ClaimRates": true,
	"Deadline": true, "Progress": true, "Stuck": true}

// Exercise runs every conformance case against the drivers that open returns.
func Exercise(t *testing.T, open func(t *testing.T) driver.Driver) {
	t.Helper()
	exercise(t, open, func(string) bool { return true })
}

// ExerciseClaims runs only the claim areas, for a driver option that
// changes the claim and nothing else (MySQL's update claim): the other
// areas would run again the same statements.
func ExerciseClaims(t *testing.T, open func(t *testing.T) driver.Driver) {
	t.Helper()
	exercise(t, open, func(area string) bool { return claimAreas[area] })
}

func exercise(t *testing.T, open Opener, include func(area string) bool) {
	t.Helper()
	for _, a := range areas {
		if !include(a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			// Areas run side by side too; the parent gives its slot back
			// while its cases wait, so -parallel bounds the whole suite.
			t.Parallel()
			a.run(t, open)
		})
	}
}

// clockSlack absorbs storage precision: docs/design.md "Database time" asks for at least
// millisecond precision, so a driver may round a time the clock reported in
// microseconds.
const clockSlack = time.Millisecond

// bundle is what a case works with: its own driver and a bounded context.
type bundle struct {
	t   *testing.T
	ctx context.Context
	d   driver.Driver
}

// setup opens a fresh driver for one case. The timeout turns a hung
// database call into a failure instead of a stuck suite.
func setup(t *testing.T, open Opener) *bundle {
	t.Helper()
	d := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return &bundle{t: t, ctx: ctx, d: d}
}

// newJob is an insert with every field filled: the driver interface leaves
// defaults to its callers.
func newJob(typ string) driver.InsertJob {
	return driver.InsertJob{
		Queue:       "default",
		Type:        typ,
		Dedupe:      sluicetype.DedupePermanent,
		Payload:     []byte(`{}`),
		MaxAttempts: 5,
	}
}

// newJobs is n newJobs of typ.
func newJobs(typ string, n int) []driver.InsertJob {
	ps := make([]driver.InsertJob, n)
	for i := range ps {
		ps[i] = newJob(typ)
	}
	return ps
}

// keyed is newJob with a business key and a dedupe mode.
func keyed(typ, key, mode string) driver.InsertJob {
	p := newJob(typ)
	p.Key, p.Dedupe = key, mode
	return p
}

// newToken is a fresh lease token, as a worker would make one.
func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func strPtr(s string) *string { return &s }

func (b *bundle) now() time.Time {
	b.t.Helper()
	now, err := b.d.Now(b.ctx)
	require.NoError(b.t, err)
	return now
}

func (b *bundle) insert(ps ...driver.InsertJob) []driver.InsertResult {
	b.t.Helper()
	res, err := b.d.Insert(b.ctx, driver.InsertParams{Jobs: ps})
	require.NoError(b.t, err)
	require.Len(b.t, res, len(ps))
	return res
}

// insertOne inserts a job that must be new and returns its id.
func (b *bundle) insertOne(p driver.InsertJob) int64 {
	b.t.Helper()
	res := b.insert(p)
	require.False(b.t, res[0].Duplicate, "a new job was reported as a duplicate")
	require.NotZero(b.t, res[0].ID)
	return res[0].ID
}

// insertMailAndPDF inserts n mail and n pdf jobs in the default queue and
// two mail jobs in the queue other: the type caps and rates count a type
// in every queue.
func (b *bundle) insertMailAndPDF(n int) {
	b.t.Helper()
	for range n {
		b.insert(newJob("mail"), newJob("pdf"))
	}
	other := newJob("mail")
	other.Queue = "other"
	b.insert(other, other)
}

// requireDuplicate inserts p and requires the answer that job id holds
// its key.
func (b *bundle) requireDuplicate(p driver.InsertJob, id int64, msgAndArgs ...any) {
	b.t.Helper()
	require.Equal(b.t, []driver.InsertResult{{ID: id, Duplicate: true}}, b.insert(p), msgAndArgs...)
}

func (b *bundle) get(id int64) *sluicetype.JobRow {
	b.t.Helper()
	j, err := b.d.GetJob(b.ctx, id)
	require.NoError(b.t, err)
	require.NotNil(b.t, j)
	require.Equal(b.t, id, j.ID)
	return j
}

func (b *bundle) claim(p driver.ClaimParams) []sluicetype.JobRow {
	b.t.Helper()
	jobs, err := b.d.Claim(b.ctx, p)
	require.NoError(b.t, err)
	require.LessOrEqual(b.t, len(jobs), p.Limit, "claim returned more jobs than its limit")
	return jobs
}

// claimOne claims the next job of queue and type under a fresh token and
// requires it to be want, so that a case never works on the wrong row.
func (b *bundle) claimOne(want driver.InsertJob, id int64, lease time.Duration) (sluicetype.JobRow, string) {
	b.t.Helper()
	tok := newToken()
	jobs := b.claim(driver.ClaimParams{Queue: want.Queue, Types: []string{want.Type}, Limit: 1, Lease: lease, Token: tok})
	require.Len(b.t, jobs, 1, "job %d was not claimable", id)
	require.Equal(b.t, id, jobs[0].ID, "claimed another job than the one set up")
	return jobs[0], tok
}

// cancel cancels job id and returns the driver's error.
func (b *bundle) cancel(id int64) error {
	_, err := b.d.Cancel(b.ctx, driver.CancelParams{ID: id})
	return err
}

// claimNew inserts p and claims it for a minute under a fresh token, the
// start of a case about one job's outcome; it returns its id and the token.
func (b *bundle) claimNew(p driver.InsertJob) (int64, string) {
	b.t.Helper()
	id := b.insertOne(p)
	_, tok := b.claimOne(p, id, time.Minute)
	return id, tok
}

// rescue runs one rescue pass of at most limit jobs.
func (b *bundle) rescue(limit int) sluicetype.RescueResult {
	b.t.Helper()
	res, err := b.d.Rescue(b.ctx, driver.RescueParams{Limit: limit})
	require.NoError(b.t, err)
	return res
}

func (b *bundle) complete(cs ...driver.Completion) []int64 {
	b.t.Helper()
	lost, err := b.d.Complete(b.ctx, driver.CompleteParams{Completions: cs})
	require.NoError(b.t, err)
	return lost
}

// makeJob inserts p and moves it to status through the driver's own
// transitions. The caller keeps p's queue and type free of other runnable
// pending jobs, which claimOne checks.
func (b *bundle) makeJob(status sluicetype.Status, p driver.InsertJob) *sluicetype.JobRow {
	b.t.Helper()
	id := b.insertOne(p)
	switch status {
	case sluicetype.StatusPending:
	case sluicetype.StatusProcessing:
		b.claimOne(p, id, time.Hour)
	case sluicetype.StatusSuccess:
		_, tok := b.claimOne(p, id, time.Hour)
		require.Empty(b.t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusSuccess}))
	case sluicetype.StatusFailed:
		_, tok := b.claimOne(p, id, time.Hour)
		require.Empty(b.t, b.complete(driver.Completion{ID: id, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("boom")}))
	case sluicetype.StatusCancelled:
		require.NoError(b.t, b.cancel(id))
	default:
		b.t.Fatalf("makeJob: unknown status %q", status)
	}
	j := b.get(id)
	require.Equal(b.t, status, j.Status)
	return j
}

// listAll pages through ListJobs with AfterID until it runs dry.
func (b *bundle) listAll(p sluicetype.ListParams) []sluicetype.JobRow {
	b.t.Helper()
	if p.Limit == 0 {
		p.Limit = 1000
	}
	var all []sluicetype.JobRow
	for {
		page, err := b.d.ListJobs(b.ctx, p)
		require.NoError(b.t, err)
		require.LessOrEqual(b.t, len(page), p.Limit)
		if len(page) == 0 {
			return all
		}
		// Keyset pages move strictly down the ids; a driver that ignored
		// AfterID would otherwise page forever.
		if p.AfterID > 0 {
			require.Less(b.t, page[0].ID, p.AfterID, "ListJobs ignored AfterID")
		}
		all = append(all, page...)
		p.AfterID = page[len(page)-1].ID
	}
}

// requireBetween checks lo <= got <= hi, widened by clockSlack on both
// sides for storage precision.
func requireBetween(t *testing.T, got, lo, hi time.Time, what string) {
	t.Helper()
	require.False(t, got.Before(lo.Add(-clockSlack)), "%s = %s, want >= %s", what, got.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano))
	require.False(t, got.After(hi.Add(clockSlack)), "%s = %s, want <= %s", what, got.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
}

// requireNotFound checks the sentinel, which callers test with errors.Is.
func requireNotFound(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, sluicetype.ErrNotFound), "want ErrNotFound, got %v", err)
}

func requireWrongState(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, sluicetype.ErrWrongState), "want ErrWrongState, got %v", err)
}

// ids returns the ids of jobs in order.
func ids(jobs []sluicetype.JobRow) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func jsonPayload(i int) []byte { return fmt.Appendf(nil, `{"i": %d}`, i) }

// jobsTable finds the name of the driver's jobs table, which the suite is
// not told: the tables live under a prefix chosen by open. It looks for the
// table that holds a marker job among those the catalogue lists.
func (b *bundle) jobsTable() string {
	b.t.Helper()
	marker := randomName("marker-")
	id := b.insertOne(newJob(marker))
	var q string
	switch b.d.Name() {
	case "sqlite":
		q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%jobs'"
	case "mysql":
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE '%jobs'"
	case "postgres":
		q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE '%jobs'"
	default:
		b.t.Fatalf("no catalogue query for driver %s", b.d.Name())
	}
	rows, err := b.d.DB().QueryContext(b.ctx, q)
	require.NoError(b.t, err)
	var names []string
	for rows.Next() {
		var n string
		require.NoError(b.t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(b.t, rows.Err())
	rows.Close()
	for _, n := range names {
		var count int
		// Other cases' tables come and go meanwhile; errors just mean "not ours".
		err := b.d.DB().QueryRowContext(b.ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id = %d AND type = '%s'", n, id, marker)).Scan(&count)
		if err == nil && count == 1 {
			require.NoError(b.t, b.cancel(id))
			_, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusCancelled, OlderThan: -time.Hour, Limit: 10})
			require.NoError(b.t, err)
			return n
		}
	}
	b.t.Fatalf("no table in %v holds job %d", names, id)
	return ""
}

// typeList is the ClaimParams.Types of a claim of typ, every type for "".
func typeList(typ string) []string {
	if typ == "" {
		return nil
	}
	return []string{typ}
}
