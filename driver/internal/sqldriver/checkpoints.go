package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The batch checkpoints (sluice_checkpoints). Reads go to the read pool;
// writes retry transient errors unless they run in the caller's
// transaction, which a failed statement may have spoiled.

func scanCheckpoint(sc interface{ Scan(...any) error }) (sluicetype.Checkpoint, error) {
	var c sluicetype.Checkpoint
	var cursor, lastErr, owner sql.NullString
	var created, updated Time
	err := sc.Scan(&c.Batch, &c.Shard, &cursor, &c.RowsDone, &c.ChunksDone, &c.ChunkSize, &c.Status, &lastErr, &owner, &c.Version, &created, &updated)
	c.Cursor, c.LastError, c.Owner = cursor.String, lastErr.String, owner.String
	c.CreatedAt, c.UpdatedAt = created.Time, updated.Time
	return c, err
}

// ListCheckpoints reads every batch cursor.
func (b *Base) ListCheckpoints(ctx context.Context) ([]sluicetype.Checkpoint, error) {
	return QueryAll(ctx, b.Read, "list checkpoints", b.Q.CheckpointList, nil, func(rows *sql.Rows) (sluicetype.Checkpoint, error) {
		return scanCheckpoint(rows)
	})
}

// GetCheckpoint reads one shard's cursor.
func (b *Base) GetCheckpoint(ctx context.Context, p driver.GetCheckpointParams) (sluicetype.Checkpoint, error) {
	c, err := scanCheckpoint(b.Read.QueryRowContext(ctx, b.Q.CheckpointGet, p.Batch, p.Shard))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("checkpoint of batch %s shard %s: %w", p.Batch, p.Shard, sluicetype.ErrCheckpointLost)
	}
	if err != nil {
		return c, fmt.Errorf("read checkpoint of batch %s shard %s: %w", p.Batch, p.Shard, err)
	}
	return c, nil
}

// CreateCheckpoint inserts the shard's cursor unless it exists.
func (b *Base) CreateCheckpoint(ctx context.Context, p driver.CreateCheckpointParams) error {
	err := RetryTransient(ctx, b.Transient, func() error {
		_, err := b.Write.ExecContext(ctx, b.Q.CheckpointCreate, p.Batch, p.Shard, p.Status, p.ChunkSize)
		return err
	})
	if err != nil {
		return fmt.Errorf("create checkpoint of batch %s shard %s: %w", p.Batch, p.Shard, err)
	}
	return nil
}

// fenced runs one version-fenced update of a checkpoint, in tx when set,
// and maps "no row matched" to ErrCheckpointLost.
func (b *Base) fenced(ctx context.Context, tx *sql.Tx, what, batch, shard, query string, args ...any) error {
	var n int64
	exec := func(ex driver.Querier) error {
		res, err := ex.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	}
	var err error
	if tx != nil {
		err = exec(tx)
	} else {
		err = RetryTransient(ctx, b.Transient, func() error { return exec(b.Write) })
	}
	if err != nil {
		return fmt.Errorf("%s checkpoint of batch %s shard %s: %w", what, batch, shard, err)
	}
	if n != 1 {
		return fmt.Errorf("%s checkpoint of batch %s shard %s: %w", what, batch, shard, sluicetype.ErrCheckpointLost)
	}
	return nil
}

// TakeCheckpoint makes p.Owner the shard's runner.
func (b *Base) TakeCheckpoint(ctx context.Context, p driver.TakeCheckpointParams) error {
	return b.fenced(ctx, nil, "take", p.Batch, p.Shard, b.Q.CheckpointTake, p.Owner, p.Status, p.Batch, p.Shard, p.Version)
}

// AdvanceCheckpoint records a chunk, in tx when set.
func (b *Base) AdvanceCheckpoint(ctx context.Context, p driver.AdvanceCheckpointParams) error {
	tx := p.Tx
	return b.fenced(ctx, tx, "advance", p.Batch, p.Shard, b.Q.CheckpointAdvance, p.Cursor, p.Rows, p.ChunkSize, p.Batch, p.Shard, p.Version)
}

// FinishCheckpoint sets the shard's final status.
func (b *Base) FinishCheckpoint(ctx context.Context, p driver.FinishCheckpointParams) error {
	var lastErr sql.NullString
	if p.Error != "" {
		lastErr = sql.NullString{String: driver.StorableText(p.Error, sluicetype.MaxErrorLen, false), Valid: true}
	}
	return b.fenced(ctx, nil, "finish", p.Batch, p.Shard, b.Q.CheckpointFinish, p.Status, lastErr, p.Batch, p.Shard, p.Version)
}

// ReleaseCheckpoint clears the shard's owner if it is still p.Owner.
func (b *Base) ReleaseCheckpoint(ctx context.Context, p driver.ReleaseCheckpointParams) error {
	return b.fenced(ctx, nil, "release", p.Batch, p.Shard, b.Q.CheckpointRelease, p.Batch, p.Shard, p.Version, p.Owner)
}

// TouchCheckpoint refreshes the shard's updated_at.
func (b *Base) TouchCheckpoint(ctx context.Context, p driver.TouchCheckpointParams) error {
	return b.fenced(ctx, nil, "touch", p.Batch, p.Shard, b.Q.CheckpointTouch, p.Batch, p.Shard, p.Version)
}

// SetCheckpointStatus moves a batch's shards from any of p.From to p.Status.
func (b *Base) SetCheckpointStatus(ctx context.Context, p driver.SetCheckpointStatusParams) (int64, error) {
	if len(p.From) == 0 {
		return 0, fmt.Errorf("set batch %s %s: no statuses to move from", p.Batch, p.Status)
	}
	args := []any{p.Status, p.Batch}
	for _, f := range p.From {
		args = append(args, f)
	}
	q := b.InList(b.Q.CheckpointStatus, 3, len(p.From))
	n, err := b.ExecCount(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("set batch %s %s: %w", p.Batch, p.Status, err)
	}
	return n, nil
}

// DeleteCheckpoints removes a batch's cursors.
func (b *Base) DeleteCheckpoints(ctx context.Context, p driver.DeleteCheckpointsParams) (int64, error) {
	batch := p.Batch
	n, err := b.ExecCount(ctx, b.Q.CheckpointDelete, batch)
	if err != nil {
		return 0, fmt.Errorf("reset batch %s: %w", batch, err)
	}
	return n, nil
}
