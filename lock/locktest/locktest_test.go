package locktest_test

import (
	"testing"

	"github.com/sluicehq/sluice/lock/locktest"
)

func TestFile(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "file"), locktest.Caps{Session: true})
}

func TestRedis(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "redis"), locktest.Caps{TTL: true, Fence: true})
}

func TestMySQL(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "mysql"), locktest.Caps{Session: true, Fence: true})
}

func TestPostgres(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "postgres"), locktest.Caps{Session: true})
}

func TestSQLiteLease(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "sqlite-lease"), locktest.Caps{TTL: true, Fence: true})
}

func TestMySQLLease(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "mysql-lease"), locktest.Caps{TTL: true, Fence: true})
}

func TestPostgresLease(t *testing.T) {
	locktest.Exercise(t, locktest.Open(t, "postgres-lease"), locktest.Caps{TTL: true, Fence: true})
}

// BenchmarkAcquireRelease is one uncontended acquire and release per op.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, backend := range locktest.Backends {
		b.Run(backend, func(b *testing.B) { locktest.Benchmark(b, locktest.Open(b, backend)) })
	}
}
