package sluice

import (
	"context"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The reads below are the cluster-wide state that operators look at, as
// stored: each is one read of a small table. They return an empty list
// rather than nil, so that their JSON is [], never null.

// RateBuckets reads every rate bucket, ordered by name; a limit whose
// bucket no claim has used yet has none.
func (c *Client) RateBuckets(ctx context.Context) ([]sluicetype.RateBucket, error) {
	return orEmpty(c.drv.ListRateBuckets(ctx))
}

// ScheduleStates reads the progress of every schedule the database knows,
// configured in this client or not; Schedules lists the configured ones.
func (c *Client) ScheduleStates(ctx context.Context) ([]sluicetype.ScheduleState, error) {
	return orEmpty(c.drv.ListSchedules(ctx))
}

// Checkpoints reads the cursor of every batch shard, ordered by batch and
// shard.
func (c *Client) Checkpoints(ctx context.Context) ([]sluicetype.Checkpoint, error) {
	return orEmpty(c.drv.ListCheckpoints(ctx))
}

// Leases reads every named lease (the maintenance leader's, the locks'),
// expired or not.
func (c *Client) Leases(ctx context.Context) ([]sluicetype.LeaseState, error) {
	return orEmpty(c.drv.ListLeases(ctx))
}

// Nodes reads the heartbeat row of every process running workers; rows
// of processes gone for long are purged.
func (c *Client) Nodes(ctx context.Context) ([]sluicetype.Node, error) {
	return orEmpty(c.drv.ListNodes(ctx))
}

// CheckSchema returns the database's schema version and nil when it is the
// one this binary was built for, as Start requires; otherwise an error
// matching sluicetype.ErrSchemaMissing or ErrSchemaTooNew that says what to
// do, or the database's own error.
func (c *Client) CheckSchema(ctx context.Context) (int, error) {
	return driver.CheckSchema(ctx, c.drv)
}

// orEmpty is a read's rows, an empty list for none.
func orEmpty[T any](rows []T, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []T{}
	}
	return rows, nil
}
