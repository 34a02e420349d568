package sqlcommon_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/sqlcommon"
)

// A driver's queries come with the shared ones, prefixed like its own; a
// driver file that repeats a shared name, or a required query found
// nowhere, is an error naming the file.
func TestLoadQueriesAddsTheSharedOnes(t *testing.T) {
	own := fstest.MapFS{"queries/claim.sql": {Data: []byte("SELECT id FROM sluice_jobs")}}
	q, err := sqlcommon.LoadQueries(own, "sqlite", "app_", "claim", "list")
	require.NoError(t, err)
	require.Equal(t, "SELECT id FROM app_jobs", q["claim"])
	require.Contains(t, q["list"], "app_jobs")
	require.NotContains(t, q["list"], "sluice_")

	_, err = sqlcommon.LoadQueries(own, "sqlite", "app_", "claim", "nowhere")
	require.ErrorContains(t, err, "query nowhere.sql is missing")

	own["queries/list.sql"] = &fstest.MapFile{Data: []byte("SELECT 1")}
	_, err = sqlcommon.LoadQueries(own, "sqlite", "app_")
	require.ErrorContains(t, err, "query list.sql is both the driver's and sqlcommon's")
}

// The shared queries are the ones no driver writes differently: none uses
// PostgreSQL's numbered placeholders.
func TestSharedQueriesUseNoNumberedPlaceholders(t *testing.T) {
	q, err := sqlcommon.LoadQueries(fstest.MapFS{"queries/x.sql": {Data: []byte("SELECT 1")}}, "mysql", "sluice_")
	require.NoError(t, err)
	for name, text := range q {
		require.False(t, strings.Contains(text, "$1"), "%s.sql", name)
	}
}

// A query shared by two drivers reaches those two and not the third: get
// is MySQL's and SQLite's, bucket_init_many PostgreSQL's and SQLite's.
func TestLoadQueriesSharedByTwo(t *testing.T) {
	own := fstest.MapFS{"queries/x.sql": {Data: []byte("SELECT 1")}}
	for db, want := range map[string][2]bool{"mysql": {true, false}, "postgres": {false, true}, "sqlite": {true, true}} {
		q, err := sqlcommon.LoadQueries(own, db, "sluice_", "list")
		require.NoError(t, err, db)
		_, get := q["get"]
		_, bucket := q["bucket_init_many"]
		require.Equal(t, want, [2]bool{get, bucket}, db)
	}
}
