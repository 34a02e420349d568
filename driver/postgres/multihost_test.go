package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// A multi-host URL (host1:port1,host2:port2 with target_session_attrs),
// as a Patroni cluster is reached without a proxy, passes through dburl
// to pgx: hosts are tried in turn and the first that accepts writes is
// kept. Here the first refuses connections, as a dead primary does.
func TestMultiHostURL(t *testing.T) {
	testdb.Open(t, "postgres") // skips, or fails in CI, when the server is down
	url := testdb.URL("postgres", "")
	rest, ok := strings.CutPrefix(url, "postgres://")
	require.True(t, ok, "SLUICE_TEST_POSTGRES is a postgres:// URL: %s", url)
	userinfo, hostAndPath, ok := strings.Cut(rest, "@")
	require.True(t, ok, "SLUICE_TEST_POSTGRES names a user: %s", url)
	dead := testdb.FreeAddr(t)
	sep := "?"
	if strings.Contains(hostAndPath, "?") {
		sep = "&"
	}
	multi := fmt.Sprintf("postgres://%s@%s,%s%starget_session_attrs=read-write", userinfo, dead, hostAndPath, sep)

	d, err := dburl.Open(multi, dburl.Options{Prefix: testdb.Prefix()})
	require.NoError(t, err)
	defer d.Close()
	var readOnly string
	require.NoError(t, d.DB().QueryRowContext(context.Background(), "SHOW transaction_read_only").Scan(&readOnly))
	require.Equal(t, "off", readOnly)

	// When no host answers, the error names every host tried.
	dead2 := testdb.FreeAddr(t)
	_, err = dburl.Open(fmt.Sprintf("postgres://postgres@%s,%s/x?target_session_attrs=read-write", dead, dead2), dburl.Options{})
	require.ErrorContains(t, err, "connect to "+dead+","+dead2+" database \"x\"")
}
