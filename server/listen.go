package server

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckListen refuses to serve an unauthenticated API beyond this machine:
// with no token configured, addr must be a loopback address (127.0.0.0/8,
// ::1 or localhost). An empty host, as in ":8080", listens on every
// interface, so it is refused too.
func CheckListen(addr string, haveTokens bool) error {
	if haveTokens {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("refusing to listen on %q (%s) with no auth token: anyone who can reach it could enqueue and run jobs; "+
		"set auth.tokens, or listen on 127.0.0.1", addr, shown)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	// A zone (fe80::1%eth0) is not loopback anyway; strip it so parsing works.
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
