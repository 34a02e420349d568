package batch

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Checkpoint is one shard's progress as stored; the driver owns the table.
type Checkpoint = sluicetype.Checkpoint

// Checkpoints returns the checkpoints of the named batch, or of every batch
// when name is empty, ordered by batch and shard.
func Checkpoints(ctx context.Context, d driver.Driver, name string) ([]Checkpoint, error) {
	all, err := d.ListCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return all, nil
	}
	var out []Checkpoint
	for _, c := range all {
		if c.Batch == name {
			out = append(out, c)
		}
	}
	return out, nil
}

// Pause marks the batch's running and failed shards paused; their runners
// stop at the next chunk boundary. It returns the shards changed.
func Pause(ctx context.Context, d driver.Driver, name string) (int64, error) {
	return d.SetCheckpointStatus(ctx, driver.SetCheckpointStatusParams{Batch: name, Status: StatusPaused, From: []string{StatusRunning, StatusFailed}})
}

// Resume marks the batch's paused shards running again, for the next Run.
func Resume(ctx context.Context, d driver.Driver, name string) (int64, error) {
	return d.SetCheckpointStatus(ctx, driver.SetCheckpointStatusParams{Batch: name, Status: StatusRunning, From: []string{StatusPaused}})
}

// Reset deletes the batch's checkpoints, so that the next run starts over.
// A runner still going loses its shard at its next checkpoint (ErrLost).
func Reset(ctx context.Context, d driver.Driver, name string) (int64, error) {
	return d.DeleteCheckpoints(ctx, driver.DeleteCheckpointsParams{Batch: name})
}

// defaultOwner names a runner host:pid:random; the host and pid let a
// restarted runner on the same host see that a crashed owner is gone.
func defaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// ownerGone reports whether owner is a process of this host that has exited.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}

// acquire creates the shard's checkpoint if needed and takes ownership.
// It returns the checkpoint as taken, with done set when there is nothing
// left to do.
func (r *shardRun) acquire(ctx context.Context) (Checkpoint, error) {
	err := r.drv.CreateCheckpoint(ctx, driver.CreateCheckpointParams{Batch: r.b.Name, Shard: r.shard.name, Status: StatusRunning, ChunkSize: r.b.ChunkSize})
	if err != nil {
		return Checkpoint{}, err
	}
	c, err := r.read(ctx)
	if err != nil {
		return c, err
	}
	switch c.Status {
	case StatusDone:
		return c, nil
	case StatusPaused:
		return c, ErrPaused
	}
	if c.Owner != "" && c.Owner != r.b.Owner && c.Status == StatusRunning && !ownerGone(c.Owner) {
		now, err := r.drv.Now(ctx)
		if err != nil {
			return c, err
		}
		if age := now.Sub(c.UpdatedAt); age < r.b.Lease {
			return c, fmt.Errorf("%w: batch %s shard %s is being run by %s (last checkpoint %s ago, lease %s); wait for it, or for the lease to expire after a crash",
				ErrBusy, r.b.Name, r.shard.name, c.Owner, age.Round(time.Millisecond), r.b.Lease)
		}
	}
	err = r.drv.TakeCheckpoint(ctx, driver.TakeCheckpointParams{Batch: r.b.Name, Shard: r.shard.name, Version: c.Version, Owner: r.b.Owner, Status: StatusRunning})
	if errors.Is(err, sluicetype.ErrCheckpointLost) {
		return c, fmt.Errorf("%w: batch %s shard %s was taken by another runner just now", ErrBusy, r.b.Name, r.shard.name)
	}
	if err != nil {
		return c, err
	}
	c.Version++
	c.Owner, c.Status = r.b.Owner, StatusRunning
	return c, nil
}

func (r *shardRun) read(ctx context.Context) (Checkpoint, error) {
	c, err := r.drv.GetCheckpoint(ctx, driver.GetCheckpointParams{Batch: r.b.Name, Shard: r.shard.name})
	if errors.Is(err, sluicetype.ErrCheckpointLost) {
		return c, fmt.Errorf("%w: batch %s shard %s: checkpoint deleted (reset?)", ErrLost, r.b.Name, r.shard.name)
	}
	return c, err
}

// lost turns the driver's fence error into ErrLost, with why.
func (r *shardRun) lost(err error, why string) error {
	if errors.Is(err, sluicetype.ErrCheckpointLost) {
		return fmt.Errorf("%w: batch %s shard %s%s", ErrLost, r.b.Name, r.shard.name, why)
	}
	return err
}

// advance records a chunk in the checkpoint, in tx (or straight on the
// database when tx is nil), if this runner still owns the shard.
func (r *shardRun) advance(ctx context.Context, tx *sql.Tx, cursor string, rows, chunkSize int) error {
	err := r.drv.AdvanceCheckpoint(ctx, driver.AdvanceCheckpointParams{Tx: tx, Batch: r.b.Name, Shard: r.shard.name, Version: r.version,
		Cursor: cursor, Rows: rows, ChunkSize: chunkSize})
	return r.lost(err, ": the checkpoint moved on (another runner took over, or a reset)")
}

// finish sets the final status (done or failed) if this runner still owns the shard.
func (r *shardRun) finish(ctx context.Context, status, lastErr string) error {
	err := r.drv.FinishCheckpoint(ctx, driver.FinishCheckpointParams{Batch: r.b.Name, Shard: r.shard.name, Version: r.version, Status: status, Error: lastErr})
	if err != nil {
		return r.lost(err, "")
	}
	r.version++
	return nil
}

// release gives the shard up when the runner stops without finishing
// (paused, cancelled), so that the next runner need not wait for the lease.
// It does nothing if the shard is no longer ours.
func (r *shardRun) release(ctx context.Context) {
	err := r.drv.ReleaseCheckpoint(ctx, driver.ReleaseCheckpointParams{Batch: r.b.Name, Shard: r.shard.name, Version: r.version, Owner: r.b.Owner})
	if err != nil && !errors.Is(err, sluicetype.ErrCheckpointLost) {
		r.b.Log.Warn("batch: release shard", "batch", r.b.Name, "shard", r.shard.name, "error", err)
	}
}

// touch refreshes updated_at while no chunk is written (throttled), so
// that the shard's lease does not run out.
func (r *shardRun) touch(ctx context.Context) error {
	err := r.drv.TouchCheckpoint(ctx, driver.TouchCheckpointParams{Batch: r.b.Name, Shard: r.shard.name, Version: r.version})
	return r.lost(err, "")
}
