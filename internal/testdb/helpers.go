package testdb

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address with a port nothing listens on now,
// for a server a test starts as a separate process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := FreeLoopbackPort()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return port
}

// FreeLoopbackPort is FreePort outside a test (a TestMain that starts
// servers shared by the package's tests).
func FreeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// SyncBuffer collects output that a process or logger writes while the
// test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
