package sluice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A bulk action runs in its own transactions, so a filter that names the
// caller's is refused rather than silently applied outside it.
func TestBulkRefusesCallersTransaction(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		// Bounded: on SQLite a bulk action would wait for the writer
		// connection that the open transaction holds.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail"})
		require.NoError(t, err)
		tx, err := d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		filter := sluicetype.ListParams{Type: "mail", Tx: tx}
		_, err = c.CountBulk(ctx, sluicetype.BulkCancel, filter)
		var in *sluice.InputError
		require.True(t, errors.As(err, &in), "%v", err)
		require.Equal(t, "tx", in.Field)
		_, err = c.Bulk(ctx, sluicetype.BulkCancel, filter, 0)
		require.True(t, errors.As(err, &in), "%v", err)
		require.Equal(t, "tx", in.Field)
		require.NoError(t, tx.Rollback())
		job, err := c.Job(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, job.Status, "nothing was cancelled")
	})
}
