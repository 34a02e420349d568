package lock_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/lock"
)

// A named lock on SQLite (a sluice_leases row; mysql://, postgres://,
// redis:// and file: URLs work the same): while the first process holds
// "nightly-report", a second one finds it busy and learns who holds it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "locks.db")
	ctx := context.Background()
	first, err := lock.Open(url, lock.Options{ID: "host-a:100"})
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	second, err := lock.Open(url, lock.Options{ID: "host-b:200"})
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()

	const ttl = time.Minute
	held, _, err := first.TryAcquire(ctx, "nightly-report", ttl)
	if err != nil || held == nil {
		log.Fatal("first acquire: ", err)
	}
	// Renew every ttl/3 while the work runs; lost reports a lease gone.
	keepCtx, stopKeeping := context.WithCancel(ctx)
	lost := lock.Keep(keepCtx, held, ttl, 10*time.Second)

	busy, holder, err := second.TryAcquire(ctx, "nightly-report", ttl)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second got it:", busy != nil, "- held by", holder.ID)

	select {
	case err := <-lost:
		log.Fatal(err)
	default: // the work would run here
	}
	stopKeeping()
	if err := held.Release(ctx); err != nil {
		log.Fatal(err)
	}
	again, _, err := second.TryAcquire(ctx, "nightly-report", ttl)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after release, second got it:", again != nil)
	again.Release(ctx)
	// Output:
	// second got it: false - held by host-a:100
	// after release, second got it: true
}
