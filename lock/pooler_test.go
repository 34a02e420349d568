package lock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/lock"
)

// The advisory-lock backend is refused behind a transaction pooler, where
// the lock would belong to whichever session the pooler lent out, and the
// refusal names the lease backend that works there. It is refused before
// connecting, so no pooler is needed here (systemtest/ha/pgbouncer runs the lease
// backend through a real one).
func TestPostgresRefusesTransactionPooler(t *testing.T) {
	_, err := lock.Open("postgres://postgres:secret@127.0.0.1:1/db?pooler=transaction", lock.Options{})
	if !errors.Is(err, lock.ErrPooler) {
		t.Fatalf("advisory lock through a transaction pooler: want ErrPooler, got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "lease=1") || strings.Contains(msg, "secret") {
		t.Fatalf("the refusal should name lease=1 and hide the password: %v", err)
	}
	// With lease=1 the same URL opens the lease backend, which gets as far
	// as connecting (to a closed port here).
	_, err = lock.Open("postgres://postgres:secret@127.0.0.1:1/db?pooler=transaction&lease=1", lock.Options{})
	if err == nil || errors.Is(err, lock.ErrPooler) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("lease backend through a pooler: want a connection error, got %v", err)
	}
	if _, err := lock.Open("postgres://postgres@127.0.0.1:1/db?pooler=session", lock.Options{}); err == nil || !strings.Contains(err.Error(), "pooler=session") {
		t.Fatalf("an unknown pooler mode should be named: %v", err)
	}
}
