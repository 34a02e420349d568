package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
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

// JobType names the job type whose jobs run one shard of the named batch.
func JobType(name string) string { return "batch:" + name }

// pausedSnooze is how long a shard job of a paused batch waits before it
// looks again; it continues once the batch is resumed.
const pausedSnooze = 30 * time.Second

// JobType returns b's shard job type, JobType(b.Name), and its settings:
// jobs deduplicated while active, so that one shard has one job at a time,
// and a handler that runs the shard named in the payload {"shard": name}
// on d. It validates b first, so that shard jobs running at once only
// read it. Enqueue the jobs with ShardJobs.
func (b *Batch) JobType(d driver.Driver) (string, sluice.Type, error) {
	if err := b.Validate(); err != nil {
		return "", sluice.Type{}, err
	}
	return JobType(b.Name), sluice.Type{Queue: sluice.DefaultQueue, Dedupe: sluicetype.DedupeActive, Handler: b.JobHandler(d)}, nil
}

// JobHandler runs one shard per job and maps the run's end to the job's
// outcome: a paused batch snoozes the job, a shard another runner holds
// (ErrBusy, ErrLost) or a cancelled run retries with backoff, and any
// other failure is permanent, as the shard is already marked failed.
func (b *Batch) JobHandler(d driver.Driver) sluice.Handler {
	return sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
		var p struct {
			Shard string `json:"shard"`
		}
		if err := job.Decode(&p); err != nil || p.Shard == "" {
			return sluice.Permanent(fmt.Errorf("batch job payload needs a shard: %s", job.Payload))
		}
		switch err := b.RunShard(ctx, d, p.Shard); {
		case err == nil:
			return nil
		case errors.Is(err, ErrPaused):
			return sluice.Snooze(pausedSnooze)
		case errors.Is(err, ErrBusy), errors.Is(err, ErrLost), ctx.Err() != nil:
			return err
		default:
			return sluice.Permanent(err)
		}
	})
}

// ShardJobs returns one job per shard of b, for Client.EnqueueMany; each
// is keyed by batch and shard and deduplicated while active, so enqueuing
// a batch again while its jobs run adds none. partition is the jobs'
// fairness key ("" for none), e.g. the tenant whose backfill this is.
func (b *Batch) ShardJobs(ctx context.Context, d driver.Driver, partition string) ([]sluice.EnqueueParams, error) {
	shards, err := b.ShardNames(ctx, d)
	if err != nil {
		return nil, err
	}
	ps := make([]sluice.EnqueueParams, len(shards))
	for i, s := range shards {
		ps[i] = sluice.EnqueueParams{Type: JobType(b.Name), Key: JobType(b.Name) + ":" + s,
			Dedupe: sluicetype.DedupeActive, Payload: map[string]string{"shard": s}, Partition: partition}
	}
	return ps, nil
}
