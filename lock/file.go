//go:build unix

package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fileLocker flocks one file per name. A lock belongs to an open file
// description, so the kernel frees it when the holder dies however it
// dies, and a second open of the same file, even in the same process,
// is a separate contender.
type fileLocker struct {
	dir string
	id  string
}

func openFile(rawURL string, opts Options) (*fileLocker, error) {
	dir := strings.TrimPrefix(strings.TrimPrefix(rawURL, "file:"), "//")
	f := &fileLocker{dir: dir, id: opts.ID}
	if dir == "" {
		d, err := ownLockDir()
		if err != nil {
			return nil, err
		}
		f.dir = d
	}
	st, err := os.Stat(f.dir)
	if err != nil {
		return nil, fmt.Errorf("lock directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lock directory %s is not a directory", f.dir)
	}
	return f, nil
}

// ownLockDir is the default lock directory, $TMPDIR/sluice-locks-UID, made
// mode 0700 on first use: in the shared temp directory itself any local
// user could create and hold a lock file first and keep the command from
// ever running. An existing one that another user owns or can write to,
// or that is not a plain directory, is refused.
func ownLockDir() (string, error) {
	uid := os.Geteuid()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sluice-locks-%d", uid))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("lock directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("lock directory: %w", err)
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return "", fmt.Errorf("lock directory %s is not a directory (a symlink?): remove it, or pass --backend file:DIR with a directory only you can write", dir)
	case sys != nil && int(sys.Uid) != uid:
		return "", fmt.Errorf("lock directory %s belongs to uid %d, not to this user (uid %d), who could hold every lock in it: remove it, or pass --backend file:DIR with a directory only you can write", dir, sys.Uid, uid)
	case st.Mode().Perm()&0o022 != 0:
		return "", fmt.Errorf("lock directory %s is writable by other users (mode %s), who could hold every lock in it: chmod 700 it", dir, st.Mode().Perm())
	}
	return dir, nil
}

// path escapes the name so that a slash or ".." in it cannot leave dir.
func (f *fileLocker) path(name string) string {
	return filepath.Join(f.dir, url.PathEscape(name)+".lock")
}

func (f *fileLocker) TryAcquire(_ context.Context, name string, _ time.Duration) (Lease, Holder, error) {
	if err := CheckName(name); err != nil {
		return nil, Holder{}, err
	}
	path := f.path(name)
	// Go opens every file with O_CLOEXEC, so CMD and its children never
	// inherit the descriptor: a child outliving its parent would otherwise
	// keep the lock. O_NOFOLLOW refuses a symlink planted in a shared
	// temp directory to make us write elsewhere.
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o666)
	writable := err == nil
	if errors.Is(err, fs.ErrPermission) {
		// Another user's lock file (or fs.protected_regular refusing
		// O_CREAT on it): see the owner check below.
		fh, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, Holder{}, fmt.Errorf("open lock file: %w", err)
	}
	// A lock file another user owns is theirs to hold for ever: whoever
	// can create it first decides whether this command ever runs. Refused
	// rather than taken as "busy", which would skip the command silently.
	if st, err := fh.Stat(); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
			fh.Close()
			return nil, Holder{}, fmt.Errorf("lock file %s belongs to uid %d, not to this user (uid %d), who could hold it to keep the command from running: remove it, or use a lock directory only you can write", path, sys.Uid, os.Geteuid())
		}
	}
	fd := int(fh.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		h := readHolder(fh)
		fh.Close()
		return nil, h, nil
	}
	if err != nil {
		fh.Close()
		return nil, Holder{}, fmt.Errorf("flock %s: %w", path, err)
	}
	l := &fileLease{f: fh, writable: writable}
	if writable {
		// The file is never unlinked: a contender that opened it before the
		// unlink would lock the orphaned inode while a third process locks a
		// new file of the same name, and both would run.
		line := f.id + " since " + time.Now().UTC().Format(time.RFC3339) + "\n"
		if err := fh.Truncate(0); err == nil {
			fh.WriteAt([]byte(line), 0)
		}
	}
	return l, Holder{}, nil
}

// readHolder reads the holder line. The holder writes it just after taking
// the lock, so an empty file is read again for a moment before giving up.
func readHolder(fh *os.File) Holder {
	buf := make([]byte, 512)
	for range 20 {
		n, _ := fh.ReadAt(buf, 0)
		line, complete := strings.CutSuffix(string(buf[:n]), "\n")
		if complete {
			id, since, _ := strings.Cut(line, " since ")
			t, _ := time.Parse(time.RFC3339, since)
			return Holder{ID: id, Since: t}
		}
		time.Sleep(time.Millisecond)
	}
	return Holder{}
}

func (f *fileLocker) Close() error { return nil }

type fileLease struct {
	mu       sync.Mutex
	f        *os.File // nil once released
	writable bool
}

func (l *fileLease) Fence() int64 { return 0 }

// Renew has nothing to extend: the lock lasts as long as the descriptor.
func (l *fileLease) Renew(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("%w: already released", ErrLost)
	}
	return nil
}

func (l *fileLease) Release(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	// Emptied before unlocking, so that the next contender to find the lock
	// busy waits for its new holder's line instead of reading ours.
	if l.writable {
		l.f.Truncate(0)
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close lock file: %w", err)
	}
	return nil
}
