package testdb

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

// TestFreePortHeld: the port FreePort returns stays taken for anyone who
// would bind it without sharing (as bind(0) for another free port or an
// outgoing connection's source port does), while a server that sets
// SO_REUSEADDR, as Go's net.Listen does, binds and serves on it, and
// again after it stopped; with no server, a connection is refused.
func TestFreePortHeld(t *testing.T) {
	port := FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("binding %s without SO_REUSEADDR: got %v, want EADDRINUSE: the port is not held", addr, err)
	}

	for range 2 { // a server, stopped and started again on the same port
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("a server could not take the held port: %v", err)
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing the server on the held port: %v", err)
		}
		c.Close()
		ln.Close()
		if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dialing the held port with no server: got %v, want connection refused", err)
		}
	}
}
