package locktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/lock"
)

// Backends lists the backends that the suite and the CLI tests run
// against. The -lease ones hold a sluice_leases row on that database.
var Backends = []string{"file", "redis", "mysql", "postgres", "sqlite-lease", "mysql-lease", "postgres-lease"}

// Target is where one test's locks live.
type Target struct {
	Backend string
	URL     string
	Prefix  string // table prefix on the database backends (SLUICE_PREFIX for the CLI)
}

// RedisURL is the Redis server for tests: SLUICE_TEST_REDIS, by default
// database 0 of the local server.
func RedisURL() string {
	if v := os.Getenv("SLUICE_TEST_REDIS"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

// NewTarget returns a target on backend whose database tables, if any, are
// under a fresh prefix and dropped when t ends. Like testdb.Open, it skips
// t loudly when the server cannot be reached, or fails it when
// SLUICE_TEST_REQUIRE_ALL=1.
func NewTarget(t testing.TB, backend string) Target {
	t.Helper()
	tg := Target{Backend: backend}
	switch backend {
	case "file":
		tg.URL = "file:" + t.TempDir()
	case "redis":
		tg.URL = RedisURL()
	case "mysql", "postgres":
		tg.URL, tg.Prefix = testdb.URL(backend, ""), testdb.Prefix()
	case "sqlite-lease":
		tg.URL, tg.Prefix = "sqlite:"+filepath.Join(t.TempDir(), "locks.db"), testdb.Prefix()
	case "mysql-lease", "postgres-lease":
		db := strings.TrimSuffix(backend, "-lease")
		u := testdb.URL(db, "")
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		tg.URL, tg.Prefix = u+sep+"lease=1", testdb.Prefix()
	default:
		t.Fatalf("locktest: unknown backend %q", backend)
	}
	if err := probe(tg); err != nil {
		msg := fmt.Sprintf("%s lock server unreachable at %s: %v", backend, dburl.Redact(tg.URL), err)
		if testdb.RequireAll() || backend == "file" || backend == "sqlite-lease" {
			t.Fatalf("%s (SLUICE_TEST_REQUIRE_ALL=1: every backend is required)", msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING %s LOCK TESTS: %s\n", strings.ToUpper(backend), msg)
		t.Skip(msg)
	}
	if tg.Prefix != "" && !strings.HasPrefix(tg.URL, "sqlite:") {
		t.Cleanup(func() { dropTables(tg) })
	}
	return tg
}

// probe opens the backend and takes and frees one lock, since some
// backends (Redis) connect only on first use.
func probe(tg Target) error {
	l, err := lock.Open(tg.URL, lock.Options{Prefix: tg.Prefix})
	if err != nil {
		return err
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	lease, _, err := l.TryAcquire(ctx, Name(), time.Minute)
	if err != nil {
		return err
	}
	if lease == nil {
		return fmt.Errorf("a fresh lock name was busy")
	}
	return lease.Release(ctx)
}

// dropTables removes the sluice tables and the MySQL lock_holders table
// made under the target's prefix.
func dropTables(tg Target) {
	u, _, _ := strings.Cut(tg.URL, "?")
	d, err := dburl.Open(u, dburl.Options{Prefix: tg.Prefix})
	if err != nil {
		return
	}
	defer d.Close()
	testdb.Drop(d, tg.Prefix)
}

// Open returns an Opener on a fresh target on backend.
func Open(t testing.TB, backend string) Opener {
	tg := NewTarget(t, backend)
	return func(t testing.TB, id string) lock.Locker {
		t.Helper()
		l, err := lock.Open(tg.URL, lock.Options{ID: id, Prefix: tg.Prefix})
		if err != nil {
			t.Fatalf("open %s lock backend: %v", backend, err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
}
