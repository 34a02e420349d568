// Package cataloguetest is the one check each bundled driver runs on its
// SQL catalogue without a database. What a server makes of each
// statement is the conformance suite's Catalogue area
// (driver/drivertest/catalogue.go), which prepares every one.
package cataloguetest

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/sqldriver"
)

// RequireLoads loads files into q (a pointer to a driver's queries
// struct, whose Get reads one job): LoadQueries fails when a field has no
// statement, a statement no field, or a statement is empty, so that the
// catalogue and its struct cannot drift apart; and Get reads the job
// columns in the order the scanners expect.
func RequireLoads(t *testing.T, q any, files fs.FS, get func() string) {
	t.Helper()
	require.NoError(t, sqldriver.LoadQueries(q, files, "app_"))
	require.Contains(t, get(), strings.Join(sqldriver.JobColumns(), ", "))
}
