package sluice

import (
	"context"
	"time"
)

// RateBucket is a cluster-wide rate limit's token bucket as last written:
// "queue:NAME" (QueueConfig.ClusterRate), "type:NAME" (Type.ClusterRate)
// or "partition:QUEUE#PARTITION" (QueueConfig.ClusterRatePerPartition).
// Its tokens have refilled since UpdatedAt.
type RateBucket struct {
	Name      string    `json:"name"`
	Tokens    float64   `json:"tokens"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RateBuckets reads every rate bucket, ordered by name; a limit whose
// bucket no claim has used yet has none.
func (c *Client) RateBuckets(ctx context.Context) ([]RateBucket, error) {
	rows, err := c.drv.ListRateBuckets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RateBucket, len(rows))
	for i, r := range rows {
		out[i] = RateBucket{Name: r.Name, Tokens: r.Tokens, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}
