// Package cataloguetest is the one check each bundled driver runs on its
// SQL catalogue without a database.
package cataloguetest

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/sqlcommon"
)

// RequireLoads loads files into q (a pointer to a driver's queries
// struct, whose Get reads one job): every field has a statement and every
// statement a field, each under the table prefix, with the job column
// list expanded.
func RequireLoads(t *testing.T, q any, files fs.FS, get func() string) {
	t.Helper()
	require.NoError(t, sqlcommon.LoadQueries(q, files, "app_"))
	sqlcommon.EachQuery(q, func(name, text string) {
		require.NotEmpty(t, text, name)
		require.NotContains(t, text, "sluice_", name)
		require.NotContains(t, text, sqlcommon.JobColumnsMarker, name)
	})
	require.Contains(t, get(), strings.Join(sqlcommon.JobColumns(), ", "))
	require.Positive(t, reflect.TypeOf(q).Elem().NumField())
}
