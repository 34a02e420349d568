package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/lock"
)

// ledger is a resource that remembers the largest fence it has seen and
// refuses writes that carry a smaller one: a holder that lost its lock
// without knowing it (a long pause, a partition) cannot write after the
// next holder did.
type ledger struct{ maxFence int64 }

func (g *ledger) write(fence int64, what string) {
	if fence < g.maxFence {
		fmt.Printf("refused %s: fence is older than the last writer's\n", what)
		return
	}
	g.maxFence = fence
	fmt.Println("wrote", what)
}

// Fencing: each acquisition of a name gets a larger Fence than every
// earlier one. A first holder stalls past its ttl without renewing; a
// second takes the lock, and the first's late write is refused by the
// resource, while its Renew learns the lock is lost.
func ExampleLease_fence() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "locks.db")
	ctx := context.Background()
	a, err := lock.Open(url, lock.Options{ID: "worker-a"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := lock.Open(url, lock.Options{ID: "worker-b"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	var g ledger

	const ttl = 200 * time.Millisecond
	first, _, err := a.TryAcquire(ctx, "ledger", ttl)
	if err != nil || first == nil {
		log.Fatal("a: ", err)
	}
	g.write(first.Fence(), "a's first entry")

	time.Sleep(2 * ttl) // a stalls, and renews nothing: its lease lapses

	second, _, err := b.TryAcquire(ctx, "ledger", ttl)
	if err != nil || second == nil {
		log.Fatal("b: ", err)
	}
	fmt.Println("b's fence is larger:", second.Fence() > first.Fence())
	g.write(second.Fence(), "b's entry")
	g.write(first.Fence(), "a's late entry")
	fmt.Println("a renews:", errors.Is(first.Renew(ctx), lock.ErrLost))
	if err := second.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// wrote a's first entry
	// b's fence is larger: true
	// wrote b's entry
	// refused a's late entry: fence is older than the last writer's
	// a renews: true
}

// The file backend on one host: file:DIR flock(2)s DIR/NAME.lock, which
// the kernel frees when the process dies, so no ttl applies. It has no
// fencing (Fence is 0). Release is idempotent.
func ExampleOpen_file() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	locks, err := lock.Open("file:"+dir, lock.Options{ID: "backup-cron"})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	held, _, err := locks.TryAcquire(ctx, "nightly-backup", 0)
	if err != nil || held == nil {
		log.Fatal("acquire: ", err)
	}
	_, err = os.Stat(filepath.Join(dir, "nightly-backup.lock"))
	fmt.Println("lock file exists:", err == nil, "- fence", held.Fence())
	busy, _, err := locks.TryAcquire(ctx, "nightly-backup", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second acquire got it:", busy != nil)
	fmt.Println("release:", held.Release(ctx), "- again:", held.Release(ctx))
	// Output:
	// lock file exists: true - fence 0
	// second acquire got it: false
	// release: <nil> - again: <nil>
}

// Keep renews a lease every ttl/3 while the work runs; the work stops
// when Keep reports the lease lost, or when it is done. The lease here
// outlives its ttl because Keep renews it.
func ExampleKeep() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "locks.db")
	ctx := context.Background()
	locks, err := lock.Open(url, lock.Options{ID: "importer"})
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	// The margin is the work's time to stop once Keep reports the lease
	// lost; a renewal may take until the margin begins.
	const ttl, margin = 2 * time.Second, 500 * time.Millisecond
	held, _, err := locks.TryAcquire(ctx, "import", ttl)
	if err != nil || held == nil {
		log.Fatal("acquire: ", err)
	}
	keepCtx, stopKeeping := context.WithCancel(ctx)
	lost := lock.Keep(keepCtx, held, ttl, margin)

	work := time.After(ttl + ttl/4) // the work, longer than the ttl
	select {
	case err := <-lost:
		fmt.Println("stopped the work:", err)
	case <-work:
		fmt.Println("work done")
	}
	stopKeeping()
	// Still ours: Release would say ErrLost if it had lapsed.
	fmt.Println("release:", held.Release(ctx))
	// Output:
	// work done
	// release: <nil>
}

// CheckName says whether a name can name a lock on every backend, before
// any is contacted.
func ExampleCheckName() {
	fmt.Println(lock.CheckName("nightly-report") == nil)
	fmt.Println(lock.CheckName("") == nil)
	fmt.Println(lock.CheckName("reports/nightly") == nil) // the file backend escapes the slash
	fmt.Println(lock.CheckName(strings.Repeat("x", lock.MaxNameLen+1)) == nil)
	// Output:
	// true
	// false
	// true
	// false
}
