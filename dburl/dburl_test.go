package dburl_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
)

// MustExist keeps SQLite from creating a file that is not there, and lets
// existing files and in-memory databases open as before.
func TestMustExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	for _, u := range []string{"sqlite:" + path, "sqlite://" + path, "sqlite:" + path + "?_pragma=synchronous(FULL)"} {
		_, err := dburl.Open(u, dburl.Options{MustExist: true})
		require.True(t, errors.Is(err, dburl.ErrNoDatabase), "%s: %v", u, err)
		require.ErrorContains(t, err, "no database at "+u)
		require.NoFileExists(t, path)
	}

	d, err := dburl.Open("sqlite:"+path, dburl.Options{})
	require.NoError(t, err, "without MustExist the file is created")
	require.NoError(t, d.Close())
	require.FileExists(t, path)
	d, err = dburl.Open("sqlite:"+path, dburl.Options{MustExist: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())

	d, err = dburl.Open("sqlite::memory:", dburl.Options{MustExist: true})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}
