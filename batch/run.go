package batch

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
)

// shardRun is one shard being processed by this runner.
type shardRun struct {
	b         *Batch
	d         driver.Dialect
	drv       driver.Driver
	shard     shard
	progress  *tracker
	transient func(error) bool

	version    int64 // the checkpoint version this runner last wrote
	cursor     []any // last key done; nil before the first chunk
	cursorText string
	size       int
	adapt      *adaptive
}

// retryable marks an error as transient.
type retryable struct{ err error }

func (e retryable) Error() string { return e.err.Error() }
func (e retryable) Unwrap() error { return e.err }

// Retryable marks err as transient, so that a sink's failure retries the
// chunk with backoff instead of failing the shard.
func Retryable(err error) error { return retryable{err} }

// transientFunc returns b.Transient, or the driver's classification of
// deadlocks, serialization failures and a busy database, plus lost
// connections and errors marked with Retryable.
func (b *Batch) transientFunc(d driver.Driver) func(error) bool {
	if b.Transient != nil {
		return b.Transient
	}
	return func(err error) bool {
		var r retryable
		var ne net.Error
		switch {
		case errors.As(err, &r), errors.Is(err, sqldriver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
			return true
		}
		return d.IsTransient(err)
	}
}

// shardFailed is the cause Run cancels the other shards with when one
// fails, so that they record why they stopped.
type shardFailed struct {
	shard string
	err   error
}

func (e *shardFailed) Error() string { return "shard " + e.shard + " failed: " + e.err.Error() }
func (e *shardFailed) Unwrap() error { return e.err }

func (r *shardRun) run(ctx context.Context) error {
	// Taking the shard is not cut short: a shard whose checkpoint was
	// created is then owned, and ends below as failed, stopped or done,
	// never left "running" by a half-done take when another shard fails.
	c, err := r.acquire(context.WithoutCancel(ctx))
	if errors.Is(err, ErrPaused) {
		return fmt.Errorf("%w: batch %s shard %s (run `sluice batch resume %s`)", ErrPaused, r.b.Name, r.shard.name, r.b.Name)
	}
	if err != nil {
		return err
	}
	if c.Status == StatusDone {
		r.progress.startShard(r.shard.name, c.RowsDone)
		return nil
	}
	r.version = c.Version
	defer r.release(context.WithoutCancel(ctx))
	err = r.work(ctx, c)
	if err == nil || errors.Is(err, ErrLost) || errors.Is(err, ErrPaused) {
		return err
	}
	why := err.Error()
	if ctx.Err() != nil {
		var sf *shardFailed
		if !errors.As(context.Cause(ctx), &sf) {
			return err // stopped from outside (a signal, the job's end): the checkpoint stays as it was
		}
		why = "stopped because " + sf.Error()
	}
	// Every other error ends the shard: it is marked failed with the error,
	// whatever step failed (a chunk, the throttle query), so that status
	// shows why, and the cursor stays at the last good chunk, so that a
	// later run resumes there once the cause is fixed.
	if ferr := r.finish(context.WithoutCancel(ctx), StatusFailed, why); ferr != nil {
		return errors.Join(err, ferr)
	}
	return err
}

// now reads the clock chunks are timed on.
func (r *shardRun) now() time.Time {
	if r.b.Clock != nil {
		return r.b.Clock()
	}
	return time.Now()
}

// work runs the shard's chunks from checkpoint c until none is left.
func (r *shardRun) work(ctx context.Context, c Checkpoint) error {
	var err error
	if r.cursor, err = decodeCursor(c.Cursor, len(r.b.Key)); err != nil {
		return err
	}
	r.cursorText = c.Cursor
	r.size = r.b.ChunkSize
	if r.b.TargetChunkDuration > 0 {
		start := r.b.MinChunk
		if c.ChunkSize > 0 {
			start = c.ChunkSize // resume at the size the last run had learned
		}
		r.adapt = newAdaptive(r.b.TargetChunkDuration, r.b.MinChunk, r.b.MaxChunk, start)
		r.size = r.adapt.size
	}
	r.progress.startShard(r.shard.name, c.RowsDone)

	for {
		if err := r.boundary(ctx); err != nil {
			return err
		}
		if err := r.waitThrottle(ctx); err != nil {
			return err
		}
		start := r.now()
		n, err := r.chunkWithRetry(ctx)
		if err != nil {
			return err
		}
		took := r.now().Sub(start)
		full := n == r.size
		if n > 0 {
			r.progress.chunk(r.shard.name, n, r.size, took)
			if r.b.Metrics != nil {
				r.b.Metrics.BatchChunk(r.b.Name, n, took)
			}
		}
		if r.adapt != nil && full {
			r.size = r.adapt.observe(n, took)
		}
		// The last chunk is paced too, before the shard is marked done, so
		// that the cap holds over the whole run.
		if err := r.pace(ctx, n, !full); err != nil {
			return err
		}
		if !full {
			// A short chunk is the end: the query found no more rows.
			if err := r.finish(ctx, StatusDone, ""); err != nil {
				return err
			}
			r.progress.shardDone(r.shard.name)
			return nil
		}
	}
}

// boundary checks, between chunks, that the shard is still ours and not paused.
func (r *shardRun) boundary(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := r.read(ctx)
	if err != nil {
		return err
	}
	if c.Version != r.version {
		return fmt.Errorf("%w: batch %s shard %s is now owned by %s", ErrLost, r.b.Name, r.shard.name, c.Owner)
	}
	if c.Status == StatusPaused {
		return fmt.Errorf("%w: batch %s shard %s stopped at %d rows (run `sluice batch resume %s`)", ErrPaused, r.b.Name, r.shard.name, c.RowsDone, r.b.Name)
	}
	return nil
}

// chunkWithRetry runs the next chunk, retrying transient errors with
// exponential backoff and jitter up to Retry.Attempts tries.
func (r *shardRun) chunkWithRetry(ctx context.Context) (int, error) {
	wait := r.b.Retry.Base
	for attempt := 1; ; attempt++ {
		n, err := r.chunk(ctx)
		if err == nil {
			return n, nil
		}
		err = fmt.Errorf("batch %s shard %s chunk after cursor %s: %w", r.b.Name, r.shard.name, cursorLabel(r.cursorText), err)
		if errors.Is(err, ErrLost) || ctx.Err() != nil || !r.transient(err) {
			return 0, err
		}
		if attempt >= r.b.Retry.Attempts {
			return 0, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		r.b.Log.Warn("batch chunk failed; retrying", "batch", r.b.Name, "shard", r.shard.name, "attempt", attempt, "error", err)
		if !service.Sleep(ctx, wait/2+rand.N(wait/2+1)) {
			return 0, err
		}
		wait = min(wait*2, r.b.Retry.Max)
	}
}

func cursorLabel(c string) string {
	if c == "" {
		return "(start)"
	}
	return c
}

// chunk reads, sinks and checkpoints the next chunk and returns its rows.
// With an in-transaction sink all three share one transaction; otherwise
// the checkpoint is written after the sink succeeds.
func (r *shardRun) chunk(ctx context.Context) (int, error) {
	db := r.drv.DB()
	q := r.chunkQuery(r.cursor, r.size)
	var ex driver.Querier = db
	var tx *sql.Tx // nil: the sink writes elsewhere, the checkpoint goes straight to the database
	if r.b.Sink.InTx() {
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return 0, fmt.Errorf("begin: %w", err)
		}
		defer tx.Rollback() // after Commit, a no-op
		ex = tx
	}
	c, err := r.fetch(ctx, ex, q)
	if err != nil || len(c.Rows) == 0 {
		return 0, err
	}
	c.Tx = tx
	if err := r.b.Sink.Write(ctx, c); err != nil {
		return 0, fmt.Errorf("sink: %w", err)
	}
	next, err := encodeCursor(c.keys[len(c.keys)-1])
	if err != nil {
		return 0, err
	}
	if err := r.advance(ctx, tx, next, len(c.Rows), r.size); err != nil {
		return 0, err
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
	}
	r.version++
	r.cursor, r.cursorText = c.keys[len(c.keys)-1], next
	return len(c.Rows), nil
}

// fetch runs the chunk query and reads its rows; only one chunk is ever in memory.
func (r *shardRun) fetch(ctx context.Context, ex driver.Querier, q *query) (*Chunk, error) {
	rows, err := ex.QueryContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	nk := len(r.b.Key)
	width := len(cols)
	if r.d.TextTimes {
		width -= nk // the raw key columns at the end
	}
	keyIdx := make([]int, nk)
	for i, k := range r.b.Key {
		keyIdx[i] = -1
		for j, c := range cols[:width] {
			if c == k {
				keyIdx[i] = j
			}
		}
		if keyIdx[i] < 0 {
			return nil, fmt.Errorf("key column %s is not among the source's columns %v", k, cols[:width])
		}
		if r.d.TextTimes {
			keyIdx[i] = width + i
		}
	}
	c := &Chunk{Batch: r.b.Name, Shard: r.shard.name, Columns: cols[:width], CursorBefore: r.cursorText, Key: r.b.Key, d: r.d}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read chunk: %w", err)
		}
		row := make(Row, width)
		for i, col := range cols[:width] {
			row[col] = plain(vals[i])
		}
		key := make([]any, nk)
		for i, j := range keyIdx {
			if vals[j] == nil {
				return nil, fmt.Errorf("key column %s is NULL in a row; keyset iteration needs NOT NULL keys", r.b.Key[i])
			}
			key[i] = plain(vals[j])
		}
		c.Rows = append(c.Rows, row)
		c.keys = append(c.keys, key)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	return c, nil
}

// plain turns driver bytes into strings, which JSON and binds both handle.
func plain(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

// count returns the shard's rows after cursor (nil: from the start), for
// the ETA.
func (r *shardRun) count(ctx context.Context, cursor []any) (int64, error) {
	q := r.chunkQuery(cursor, 0)
	cq := "SELECT COUNT(*) FROM (" + q.sql.String() + ") c"
	var n int64
	if err := r.drv.DB().QueryRowContext(ctx, cq, q.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count batch %s shard %s: %w", r.b.Name, r.shard.name, err)
	}
	return n, nil
}

// DryRunResult is what the first chunk of the first unfinished shard would be.
type DryRunResult struct {
	Shard string
	SQL   string
	Args  []any
	Rows  int
	// Throttle is what the throttle query returned (nil without one).
	Throttle *float64
	// Total is every shard's rows, with CountTotal; else 0.
	Total int64
	// SinkChecked says that the SQL sink's statements ran on the chunk
	// in a transaction that was rolled back.
	SinkChecked bool
}

// DryRun runs every query a run would, read-only, and reports the next
// chunk of the first shard that is not done: the shard query, the chunk
// query, the throttle query, the counts with CountTotal, and an SQL sink's
// statements on that chunk inside a transaction that is rolled back. A
// query that fails fails the dry run as it would fail the run. It writes
// nothing, not even a checkpoint.
func (b *Batch) DryRun(ctx context.Context, d driver.Driver) (DryRunResult, error) {
	if err := b.Validate(); err != nil {
		return DryRunResult{}, err
	}
	shards, err := b.shards(ctx, d)
	if err != nil {
		return DryRunResult{}, err
	}
	var res DryRunResult
	if b.Throttle.Query != "" {
		v, err := b.throttleValue(ctx, d)
		if err != nil {
			return res, err
		}
		res.Throttle = &v
	}
	p := newProgressTracker(b)
	if err := p.preload(ctx, d, shards); err != nil {
		return res, err
	}
	res.Total = p.total
	cps, err := Checkpoints(ctx, d, b.Name)
	if err != nil {
		return res, err
	}
	byShard := map[string]Checkpoint{}
	for _, c := range cps {
		byShard[c.Shard] = c
	}
	for _, s := range shards {
		c := byShard[s.name]
		if c.Status == StatusDone {
			continue
		}
		r := &shardRun{b: b, d: d.Dialect(), drv: d, shard: s}
		if r.cursor, err = decodeCursor(c.Cursor, len(b.Key)); err != nil {
			return res, err
		}
		size := b.ChunkSize
		if b.TargetChunkDuration > 0 {
			size = max(b.MinChunk, min(b.MaxChunk, c.ChunkSize))
		}
		q := r.chunkQuery(r.cursor, size)
		ch, err := r.fetch(ctx, d.DB(), q)
		if err != nil {
			return res, fmt.Errorf("batch %s shard %s: %w", b.Name, s.name, err)
		}
		res.Shard, res.SQL, res.Args, res.Rows = s.name, q.sql.String(), q.args, len(ch.Rows)
		if res.SinkChecked, err = r.checkSink(ctx, ch); err != nil {
			return res, fmt.Errorf("batch %s shard %s: sink: %w", b.Name, s.name, err)
		}
		return res, nil
	}
	return res, nil
}

// checkSink runs an SQL sink's statements (alone or after a copy) on the
// chunk in a transaction it rolls back, and reports whether it did: the
// copy itself writes to another database and a Go sink may reach outside
// the database, so neither is run.
func (r *shardRun) checkSink(ctx context.Context, ch *Chunk) (bool, error) {
	sink := r.b.Sink
	if c, ok := sink.(CopySink); ok {
		sink = c.Then
	}
	q, ok := sink.(SQLSink)
	if !ok || len(ch.Rows) == 0 {
		return false, nil
	}
	tx, err := r.drv.DB().BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	ch.Tx = tx
	if err := q.Write(ctx, ch); err != nil {
		return false, err
	}
	return true, nil
}
