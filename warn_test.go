package sluice_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// An enqueue of a type the config does not declare is warned of once per
// type and client: a server taking a stream of them from an app logs one
// line, not one per request.
func TestUnknownTypeWarnedOnce(t *testing.T) {
	var logs bytes.Buffer
	noop := sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Types:  map[string]sluice.Type{"known": {Handler: noop}}})
	require.NoError(t, err)
	ctx := context.Background()
	for _, typ := range []string{"known", "typo", "typo", "known", "other", "typo"} {
		_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: typ})
		require.NoError(t, err)
	}
	const warning = "enqueued a job of a type the config does not declare"
	require.Equal(t, 2, strings.Count(logs.String(), warning), logs.String())
	require.Contains(t, logs.String(), "type=typo")
	require.Contains(t, logs.String(), "type=other")
	require.NotContains(t, logs.String(), "type=known")
}
