// Package clienttest runs a sluice client in a test's own process.
package clienttest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
)

// Start builds a client from cfg and starts it; it is stopped, with five
// seconds for its jobs to finish, when the test ends.
func Start(t testing.TB, cfg sluice.Config) *sluice.Client {
	t.Helper()
	c, err := sluice.NewClient(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Stop(ctx)
	})
	return c
}
