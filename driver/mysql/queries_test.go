package mysql

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/internal/sqlcommon"
)

// The catalogue loads without a database: every field of queries has a
// statement and every statement a field, each under the table prefix,
// with the job column list expanded.
func TestQueriesLoad(t *testing.T) {
	q := new(queries)
	require.NoError(t, sqlcommon.LoadQueries(q, files, "app_"))
	sqlcommon.EachQuery(q, func(name, text string) {
		require.NotEmpty(t, text, name)
		require.NotContains(t, text, "sluice_", name)
		require.NotContains(t, text, sqlcommon.JobColumnsMarker, name)
	})
	require.Contains(t, q.Get, strings.Join(sqlcommon.JobColumns(), ", "))
	require.Positive(t, reflect.TypeOf(*q).NumField())
}
