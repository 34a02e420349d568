package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// While the server refuses connections, as through a failover, the
// LISTEN connection is retried after waits that double from 100 ms but
// never exceed a second, so that it is back within about a second of the
// server (or the new primary) accepting connections.
func TestListenRetryIsCapped(t *testing.T) {
	// A port nothing listens on: every connection attempt is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/none", port))
	require.NoError(t, err)
	d := listening{&Driver{connConfig: cfg, channel: "sluice_jobs"}}

	var logs strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	d.Listen(ctx, func(string) { t.Error("woken with no connection") }, slog.New(slog.NewTextHandler(&logs, nil)))

	var waits []string
	for _, m := range regexp.MustCompile(`retry_in=(\S+)`).FindAllStringSubmatch(logs.String(), -1) {
		waits = append(waits, m[1])
	}
	require.GreaterOrEqual(t, len(waits), 6, "retries in 4s:\n%s", logs.String())
	require.Equal(t, []string{"100ms", "200ms", "400ms", "800ms", "1s", "1s"}, waits[:6])
	for _, w := range waits[6:] {
		require.Equal(t, "1s", w)
	}
}
