package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// /readyz is 200 only when the schema is exactly the binary's: an empty
// database, one at an older version and one migrated by a newer binary all
// answer 503, each saying why.
func TestReadyzSchemaVersion(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		ctx := context.Background()
		d, tg := testdb.OpenURL(t, name)
		_, latest, err := d.SchemaVersion(ctx)
		require.NoError(t, err)
		a := start(t, d, nil, nil)
		setVersion := func(v int) {
			t.Helper()
			_, err := d.DB().ExecContext(ctx, fmt.Sprintf("UPDATE %sschema SET version = %d WHERE id = 1", tg.Prefix, v))
			require.NoError(t, err)
		}

		r := a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, float64(latest), r.body["schema_version"])

		setVersion(latest - 1)
		r = a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusServiceUnavailable, r.code, "older schema: %s", r.raw)
		require.Contains(t, r.body["error"], fmt.Sprintf("schema version %d, want %d", latest-1, latest))
		require.Contains(t, r.body["error"], "sluice migrate")

		setVersion(latest + 1)
		r = a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusServiceUnavailable, r.code, "newer schema: %s", r.raw)
		require.Contains(t, r.body["error"], fmt.Sprintf("schema version %d is newer", latest+1))

		setVersion(latest)
		r = a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusOK, r.code, "current again: %s", r.raw)

		// A database never migrated: no tables under this prefix at all.
		empty, err := dburl.Open(tg.URL, dburl.Options{Prefix: testdb.Prefix()})
		require.NoError(t, err)
		t.Cleanup(func() { empty.Close() })
		r = start(t, empty, nil, nil).do("GET", "/readyz", "")
		require.Equal(t, http.StatusServiceUnavailable, r.code, "empty database: %s", r.raw)
		require.Contains(t, r.body["error"], fmt.Sprintf("schema version 0, want %d", latest))
	})
}
