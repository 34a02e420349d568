package locktest_test

import (
	"testing"

	"github.com/sluicehq/sluice/lock/locktest"
)

// caps is what each backend promises beyond exclusion.
var caps = map[string]locktest.Caps{
	"file":           {Session: true},
	"redis":          {TTL: true, Fence: true},
	"mysql":          {Session: true, Fence: true},
	"postgres":       {Session: true},
	"sqlite-lease":   {TTL: true, Fence: true},
	"mysql-lease":    {TTL: true, Fence: true},
	"postgres-lease": {TTL: true, Fence: true},
}

// TestBackends runs the conformance suite against every backend.
func TestBackends(t *testing.T) {
	for _, backend := range locktest.Backends {
		t.Run(backend, func(t *testing.T) {
			c, ok := caps[backend]
			if !ok {
				t.Fatalf("no caps listed for backend %q", backend)
			}
			locktest.Exercise(t, locktest.Open(t, backend), c)
		})
	}
}

// BenchmarkAcquireRelease is one uncontended acquire and release per op.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, backend := range locktest.Backends {
		b.Run(backend, func(b *testing.B) { locktest.Benchmark(b, locktest.Open(b, backend)) })
	}
}
