package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// WaitFor polls cond every 50 ms until it holds, and fails the test naming
// what once limit passes.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AllJobs reads every job matching filter (its AfterID and Limit are set
// here), in id order, paging through ListJobs.
func AllJobs(t testing.TB, d driver.Driver, filter sluicetype.ListParams) []sluicetype.JobRow {
	t.Helper()
	var out []sluicetype.JobRow
	filter.AfterID, filter.Limit = 0, 1000
	for {
		rows, err := d.ListJobs(context.Background(), filter)
		require.NoError(t, err)
		out = append(out, rows...)
		if len(rows) < filter.Limit {
			return out
		}
		filter.AfterID = rows[len(rows)-1].ID
	}
}

// JobsByStatus reads every job matching filter but its Status, by status.
func JobsByStatus(t testing.TB, d driver.Driver, filter sluicetype.ListParams) map[sluicetype.Status][]sluicetype.JobRow {
	t.Helper()
	out := map[sluicetype.Status][]sluicetype.JobRow{}
	filter.Status = ""
	for _, r := range AllJobs(t, d, filter) {
		out[r.Status] = append(out[r.Status], r)
	}
	return out
}
