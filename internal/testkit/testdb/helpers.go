package testdb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
)

// FreeAddr returns a loopback address with a port held for the test (see
// FreePort), for a server a test starts as a separate process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// FreePort returns a loopback port nothing listens on, held for the rest
// of the test: a socket bound to it that never listens, with SO_REUSEADDR.
// Closing the port before the server binds it would leave it to anyone in
// between (another test's FreePort, the source port of any outgoing
// connection); held, the kernel gives it to neither, while a server that
// sets SO_REUSEADDR itself, as MariaDB, PostgreSQL, PHP's built-in server
// and Go's net.Listen do, binds and listens on it beside the holder. A
// connection to it while no server listens is refused, as to any closed
// port, so a test can stop its server and start it again on the same port
// without anyone taking the port in between.
func FreePort(t testing.TB) int {
	t.Helper()
	port, release, err := HoldPort()
	if err != nil {
		t.Fatalf("holding a free port: %v", err)
	}
	t.Cleanup(release)
	return port
}

// HoldPort is FreePort for a server that outlives one test (shared by a
// package's tests): the port is held until release.
func HoldPort() (port int, release func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("socket: %w", err)
	}
	sa, err := func() (syscall.Sockaddr, error) {
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
			return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return nil, fmt.Errorf("bind 127.0.0.1:0: %w", err)
		}
		return syscall.Getsockname(fd)
	}()
	if err != nil {
		syscall.Close(fd)
		return 0, nil, err
	}
	return sa.(*syscall.SockaddrInet4).Port, func() { syscall.Close(fd) }, nil
}

// FreeLoopbackPort returns a loopback port nothing listens on now, for a
// TestMain that starts servers shared by the package's tests: nothing
// holds it, so another process may take it before the server binds it.
// It is drawn from below the kernel's ephemeral range (32768 and up by
// default), which the source port of every outgoing connection comes
// from: a Galera joiner binds its port only after its state transfer,
// seconds later, and a port from the ephemeral range was taken in between
// by some connection of a test running beside it.
func FreeLoopbackPort() (int, error) {
	for range 200 {
		port := lowPortBase + rand.IntN(lowPortSpan)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d", lowPortBase, lowPortBase+lowPortSpan-1)
}

// The ports FreeLoopbackPort draws from: below the default ephemeral
// range, above the well-known services.
const lowPortBase, lowPortSpan = 20000, 12000

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
