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

// Redact hides every password a database URL can carry: the user info's,
// up to the authority's last '@' as net/url and the MySQL driver read it
// (password "p@ss"; pgx would read "p" and host "ss@db"), and the password
// parameters pgx reads from a postgres URL's query. The rest is kept as
// written.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://app:s3cret@db:3306/app":                                    "mysql://app:***@db:3306/app",
		"mysql://app:s3cret@tcp(db:3306)/app?parseTime=true":                "mysql://app:***@tcp(db:3306)/app?parseTime=true",
		"postgres://app:s3cret@db:5432/app?sslmode=require":                 "postgres://app:***@db:5432/app?sslmode=require",
		"postgres://app:p@ss@db:5432/app":                                   "postgres://app:***@db:5432/app",
		"postgres://app:p%40ss@db/app":                                      "postgres://app:***@db/app",
		"postgres://app@db/app?sslmode=require&password=s3cret":             "postgres://app@db/app?sslmode=require&password=***",
		"postgres://app@db/app?PASSWORD=s3cret&sslpassword=k3y":             "postgres://app@db/app?PASSWORD=***&sslpassword=***",
		"postgres://app@db/app?pass%77ord=s3cret":                           "postgres://app@db/app?pass%77ord=***",
		"postgresql://app:s3cret@db/app?password=s3cret&pooler=transaction": "postgresql://app:***@db/app?password=***&pooler=transaction",
		"postgres://db/app?user=app@corp":                                   "postgres://db/app?user=app@corp",
		"postgres://app@db/app":                                             "postgres://app@db/app",
		"sqlite:/var/lib/app/sluice.db":                                     "sqlite:/var/lib/app/sluice.db",
		"sqlite:///tmp/a:b@c.db":                                            "sqlite:///tmp/a:b@c.db",
	} {
		require.Equal(t, want, dburl.Redact(in), in)
	}
}
