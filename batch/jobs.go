package batch

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// ShardNames lists the batch's shards by name, in order. A batch without
// shards has one, named "all".
func (b *Batch) ShardNames(ctx context.Context, d driver.Driver) ([]string, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	shards, err := b.shards(ctx, d)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(shards))
	for i, s := range shards {
		names[i] = s.name
	}
	return names, nil
}

// RunShard processes one shard from its checkpoint. It is what a worker
// runs for a shard enqueued as a sluice job, so that the shards of one
// batch spread over many workers and a dead worker's shard resumes, through
// the normal lease rescue, from where it stopped.
func (b *Batch) RunShard(ctx context.Context, d driver.Driver, name string) error {
	if err := b.Validate(); err != nil {
		return err
	}
	shards, err := b.shards(ctx, d)
	if err != nil {
		return err
	}
	for _, s := range shards {
		if s.name == name {
			r := &shardRun{b: b, d: d.Dialect(), drv: d, shard: s, progress: newProgressTracker(b), transient: b.transientFunc(d)}
			return r.run(ctx)
		}
	}
	return fmt.Errorf("batch %s: no shard %q", b.Name, name)
}
