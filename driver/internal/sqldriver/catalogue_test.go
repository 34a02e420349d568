package sqldriver

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// ownCatalogue is a dialect's catalogue for the tests: the statements of Queries
// not shared, read from the shared set under the dialect's names, plus
// what extra adds.
func ownCatalogue(t *testing.T, extra string) fstest.MapFS {
	t.Helper()
	sharedStmts := map[string]statement{}
	require.NoError(t, readCatalogue(sharedStmts, shared, "queries"))
	var sb strings.Builder
	EachQuery(&Queries{}, func(name, _ string) {
		if _, ok := sharedStmts[name]; !ok {
			sb.WriteString("-- name: " + name + "\nSELECT 1 FROM sluice_jobs\n")
		}
	})
	sb.WriteString(extra)
	return fstest.MapFS{"queries/all.sql": {Data: []byte(sb.String())}}
}

// A catalogue fills every field, under the prefix, with the job columns
// expanded; each mismatch between the struct and the files is an error
// that names the statement and the file.
func TestLoadQueries(t *testing.T) {
	var q Queries
	require.NoError(t, LoadQueries(&q, ownCatalogue(t, ""), "app_"))
	require.Equal(t, "SELECT 1 FROM app_jobs", q.Claim)
	require.Equal(t, "SELECT "+JobColumnList()+" FROM app_jobs", q.List)

	err := LoadQueries(&q, ownCatalogue(t, "-- name: Stray\nSELECT 2\n"), "app_")
	require.ErrorContains(t, err, "statements with no field in *sqldriver.Queries: Stray (queries/all.sql)")

	err = LoadQueries(&q, ownCatalogue(t, "-- name: List\nSELECT 2\n"), "app_")
	require.ErrorContains(t, err, "statement List is in both queries/all.sql and queries/jobs.sql")

	err = LoadQueries(&q, ownCatalogue(t, "-- name: Empty\n-- only a comment\n"), "app_")
	require.ErrorContains(t, err, "queries/all.sql: statement Empty is empty")

	var more struct {
		Queries
		Missing string
	}
	err = LoadQueries(&more, ownCatalogue(t, ""), "app_")
	require.ErrorContains(t, err, `query Missing: no "-- name: Missing" line in queries/*.sql`)

	fsys := ownCatalogue(t, "")
	fsys["queries/head.sql"] = &fstest.MapFile{Data: []byte("SELECT 3\n-- name: X\nSELECT 4\n")}
	require.ErrorContains(t, LoadQueries(&q, fsys, "app_"), "queries/head.sql: SQL before the first")
}

// The shared statements are those every dialect runs as written: none
// uses PostgreSQL's numbered placeholders.
func TestSharedStatementsUseNoNumberedPlaceholders(t *testing.T) {
	stmts := map[string]statement{}
	require.NoError(t, readCatalogue(stmts, shared, "queries"))
	require.NotEmpty(t, stmts)
	for name, s := range stmts {
		require.NotContains(t, s.text, "$1", name)
	}
}

// The markers expand to numbered placeholders from the given start, and
// a type filter disappears without types.
func TestMarkers(t *testing.T) {
	num := func(n int) string { return "$" + string(rune('0'+n)) }
	require.Equal(t, "id IN ($2,$3)", List("id IN ("+ListMarker+")", 2, 2, num))
	q := "a = $1" + TypesMarker + " UNION b = $1" + TypesMarker
	require.Equal(t, "a = $1 AND type IN ($2,$3) UNION b = $1 AND type IN ($2,$3)", TypeFilter(q, 2, []string{"x", "y"}, num))
	require.Equal(t, "a = $1 UNION b = $1", TypeFilter(q, 2, nil, num))
}
