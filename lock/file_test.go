//go:build unix

package lock_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/lock"
)

// nobody is the uid of another local user, which the tests (run as root,
// as CI runs them) give a lock file or directory to.
const nobody = 65534

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("SLUICE_TEST_REQUIRE_ALL") != "" {
			t.Fatal("needs root to give a file to another user, and SLUICE_TEST_REQUIRE_ALL is set")
		}
		t.Skip("needs root to give a file to another user")
	}
}

// A lock file another user created first is refused with the reason,
// not taken as a busy lock: as "busy", `sluice lock` would skip the
// command silently on every run for as long as that user holds it.
func TestFileLockRefusesAnotherUsersFile(t *testing.T) {
	asRoot(t)
	dir := t.TempDir()
	l, err := lock.Open("file:"+dir, lock.Options{ID: "me"})
	require.NoError(t, err)
	path := filepath.Join(dir, "nightly.lock")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Chown(path, nobody, nobody))
	_, _, err = l.TryAcquire(context.Background(), "nightly", time.Minute)
	require.ErrorContains(t, err, "belongs to uid 65534, not to this user (uid 0)")

	require.NoError(t, os.Chown(path, 0, 0))
	lease, h, err := l.TryAcquire(context.Background(), "nightly", time.Minute)
	require.NoError(t, err, h)
	require.NotNil(t, lease)
	require.NoError(t, lease.Release(context.Background()))
}

// The default lock directory is the user's own, mode 0700, under the
// temp directory rather than the shared temp directory itself; one that
// another user owns or may write to is refused.
func TestFileLockDefaultDirectoryIsTheUsers(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	own := filepath.Join(tmp, "sluice-locks-"+strconv.Itoa(os.Geteuid()))
	l, err := lock.Open("file:", lock.Options{ID: "me"})
	require.NoError(t, err)
	lease, _, err := l.TryAcquire(context.Background(), "nightly", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, lease)
	require.FileExists(t, filepath.Join(own, "nightly.lock"))
	require.NoFileExists(t, filepath.Join(tmp, "sluice-nightly.lock"))
	st, err := os.Stat(own)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	require.NoError(t, lease.Release(context.Background()))

	require.NoError(t, os.Chmod(own, 0o777))
	_, err = lock.Open("file:", lock.Options{ID: "me"})
	require.ErrorContains(t, err, "is writable by other users")
	require.NoError(t, os.Chmod(own, 0o700))

	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(own, nobody, nobody))
		_, err = lock.Open("file:", lock.Options{ID: "me"})
		require.ErrorContains(t, err, "belongs to uid 65534")
	}
	require.NoError(t, os.RemoveAll(own))
	require.NoError(t, os.Symlink(tmp, own))
	_, err = lock.Open("file:", lock.Options{ID: "me"})
	require.ErrorContains(t, err, "is not a directory")
}
