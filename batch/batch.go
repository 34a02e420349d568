// Package batch runs resumable keyset batches over large tables: a source
// query is read in chunks ordered by its key columns, each chunk goes to a
// sink, and a checkpoint row records the last key done, so that a stopped
// or killed run resumes where it left off.
//
// # Guarantees
//
// With a sink that writes to the same database (FuncSink, SQLSink), the
// chunk is read, written and checkpointed in one transaction: a crash at
// any instant either commits all three or none, so no chunk is lost or
// done twice. With an external sink (HTTPSink) the checkpoint follows a
// successful delivery, so a crash between the two repeats that one chunk:
// at-least-once, with an idempotency key naming the chunk.
//
// # Iteration semantics
//
// Chunks follow the key order from the checkpointed cursor, which is the
// key of the last row done. A row deleted during the run is not visited
// if the cursor has not reached it yet. A row inserted with a key above
// the cursor is visited; one inserted with a key below it (behind the
// cursor) is not. Rows that exist throughout are visited exactly once. Key
// columns must be NOT NULL, and a row whose key changes during the run may
// be visited twice or not at all, so keys should be immutable (an id, a
// creation time).
//
// # Ownership
//
// One runner owns a shard at a time. Taking a shard bumps the checkpoint's
// version, and every checkpoint update requires the version the runner
// last wrote, so a second runner fails fast with ErrBusy while the first
// is live (checkpointed within Lease), and a runner whose shard was taken
// over stops with ErrLost without writing.
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Checkpoint statuses.
const (
	StatusRunning = sluicetype.CheckpointRunning
	StatusPaused  = "paused"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Errors a run ends with.
var (
	// ErrBusy: another live runner owns the shard.
	ErrBusy = errors.New("shard is owned by another runner")
	// ErrLost: the shard was taken over or reset during the run.
	ErrLost = errors.New("shard ownership lost")
	// ErrPaused: the batch was paused; resume it to continue.
	ErrPaused = errors.New("batch is paused")
)

// Defaults for what a Batch leaves out.
const (
	DefaultChunkSize = 1000
	DefaultMinChunk  = 100
	DefaultMaxChunk  = 10000
	// MaxChunkLimit bounds chunks so that an IN list of a chunk's keys fits
	// SQLite's 32766 bind parameters (MySQL and PostgreSQL allow 65535).
	MaxChunkLimit = 30000
	DefaultLease  = time.Minute
)

// Row is one source row, by column name. Text arrives as string.
type Row map[string]any

// Batch describes one batch. Name, Source, Key and Sink are required.
type Batch struct {
	Name string
	// Source is a SELECT without ORDER BY or LIMIT. With value or query
	// shards it contains {shard}, which is bound to the shard's value.
	Source string
	// Key lists the columns that order the rows, unique together, such as
	// [id] or [created_at, id]; they must be among Source's columns.
	Key    []string
	Shards Shards
	Sink   Sink

	// ChunkSize fixes the rows per chunk (default DefaultChunkSize) unless
	// TargetChunkDuration is set: then the size adapts, within MinChunk
	// and MaxChunk, so that a chunk takes about that long.
	ChunkSize           int
	TargetChunkDuration time.Duration
	MinChunk, MaxChunk  int
	// Clock times each chunk for the adaptive size and the chunk metrics;
	// nil is time.Now. Tests pass a clock their sink moves, so that the
	// sizing they check does not depend on how busy the machine is.
	Clock func() time.Time

	Throttle Throttle
	Retry    Retry
	// Parallel bounds the shards run at once in this process (default 1).
	Parallel int
	// Lease is how long a runner that has not checkpointed still owns its
	// shard: a second runner within it gets ErrBusy. Default DefaultLease,
	// raised to twice TargetChunkDuration if that is longer.
	Lease time.Duration
	// CountTotal runs a COUNT(*) over each shard at start, for an ETA. It
	// can be slow on large tables, so it is opt-in.
	CountTotal bool
	// Progress, if set, is called after each chunk and while throttled.
	// Calls come from the shards' goroutines, one at a time.
	Progress func(Progress)
	// Metrics, if set, counts every committed chunk under the batch's
	// name: its rows and how long it took. A sluice Client's Metrics() is
	// one, so that the chunks a process runs show on its /metrics.
	Metrics ChunkCounter
	Log     *slog.Logger
	// Transient classifies errors worth retrying; default: the driver's
	// deadlock, serialization and busy errors, lost connections, and
	// errors marked with Retryable.
	Transient func(error) bool
	// Owner names this runner in the checkpoints (default host:pid:random).
	Owner string

	// limiter is Throttle.MaxRowsPerSec's bucket, made by the first
	// Validate and shared by every shard run through b.
	limiter *rate.Limiter
}

// ChunkCounter counts committed chunks.
type ChunkCounter interface {
	BatchChunk(batch string, rows int, took time.Duration)
}

// Shards splits a batch into independent parts, each with its own
// checkpoint. At most one field is set; none means one shard, "all".
type Shards struct {
	Values []string // bound to {shard} in the source
	Query  string   // a query whose first column yields the values
	Window *Window  // half-open time windows over a column
}

// Window splits [From, To) into windows of Step on Column: the shard
// [a, b) adds WHERE Column >= a AND Column < b, so a row exactly on a
// boundary falls in exactly one window.
type Window struct {
	Column   string
	From, To time.Time
	Step     time.Duration
}

// Retry bounds the retries of a chunk that failed with a transient error.
type Retry struct {
	Attempts int           // tries per chunk, default 5
	Base     time.Duration // first delay, default 200ms; doubles per try
	Max      time.Duration // longest delay, default 10s
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// CheckName checks a batch name or a shard value, which name checkpoints.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("name %q: want 1-128 letters, digits, '_', '.', ':' or '-'", name)
	}
	return nil
}

// Validate checks b and fills in defaults.
func (b *Batch) Validate() error {
	if err := CheckName(b.Name); err != nil {
		return fmt.Errorf("batch %w", err)
	}
	if err := CheckSource(b.Source); err != nil {
		return fmt.Errorf("batch %s: %w", b.Name, err)
	}
	if len(b.Key) == 0 {
		return fmt.Errorf("batch %s: no key columns", b.Name)
	}
	seen := map[string]bool{}
	for _, k := range b.Key {
		if err := CheckIdent(k); err != nil {
			return fmt.Errorf("batch %s: key: %w", b.Name, err)
		}
		if seen[k] {
			return fmt.Errorf("batch %s: key column %s repeated", b.Name, k)
		}
		seen[k] = true
	}
	if err := b.Shards.check(b.Source); err != nil {
		return fmt.Errorf("batch %s: shards: %w", b.Name, err)
	}
	if b.Sink == nil {
		return fmt.Errorf("batch %s: no sink", b.Name)
	}
	if c, ok := b.Sink.(checker); ok {
		if err := c.Check(b.Key); err != nil {
			return fmt.Errorf("batch %s: %w", b.Name, err)
		}
	}
	if b.ChunkSize == 0 {
		b.ChunkSize = DefaultChunkSize
	}
	if b.MinChunk == 0 {
		b.MinChunk = DefaultMinChunk
	}
	if b.MaxChunk == 0 {
		b.MaxChunk = DefaultMaxChunk
	}
	if b.ChunkSize < 1 || b.MinChunk < 1 || b.MinChunk > b.MaxChunk || b.MaxChunk > MaxChunkLimit || b.ChunkSize > MaxChunkLimit {
		return fmt.Errorf("batch %s: chunk sizes: want 1 <= min (%d) <= max (%d) <= %d and size (%d) <= %d",
			b.Name, b.MinChunk, b.MaxChunk, MaxChunkLimit, b.ChunkSize, MaxChunkLimit)
	}
	if b.TargetChunkDuration < 0 {
		return fmt.Errorf("batch %s: negative target chunk duration", b.Name)
	}
	if b.Retry.Attempts == 0 {
		b.Retry.Attempts = 5
	}
	if b.Retry.Base == 0 {
		b.Retry.Base = 200 * time.Millisecond
	}
	if b.Retry.Max == 0 {
		b.Retry.Max = 10 * time.Second
	}
	if b.Parallel < 1 {
		b.Parallel = 1
	}
	if b.Lease == 0 {
		b.Lease = max(DefaultLease, 2*b.TargetChunkDuration)
	}
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	if b.Owner == "" {
		b.Owner = defaultOwner()
	}
	if err := b.Throttle.check(); err != nil {
		return err
	}
	if b.Throttle.MaxRowsPerSec > 0 && b.limiter == nil {
		b.limiter = newRowLimiter(b.Throttle.MaxRowsPerSec, b.maxChunk())
	}
	return nil
}

func (s Shards) check(source string) error {
	set := 0
	for _, ok := range []bool{s.Values != nil, s.Query != "", s.Window != nil} {
		if ok {
			set++
		}
	}
	if set > 1 {
		return errors.New("set one of values, query or window")
	}
	hasMarker := strings.Contains(source, shardMarker)
	switch {
	case s.Values != nil || s.Query != "":
		if !hasMarker {
			return fmt.Errorf("value shards need %s in the source, where the shard's value is bound", shardMarker)
		}
		if s.Values != nil && len(s.Values) == 0 {
			return errors.New("empty list of values")
		}
	case hasMarker:
		return fmt.Errorf("the source has %s but no value or query shards are set", shardMarker)
	case s.Window != nil:
		w := s.Window
		if err := CheckIdent(w.Column); err != nil {
			return fmt.Errorf("window: %w", err)
		}
		if !w.From.Before(w.To) || w.Step <= 0 {
			return fmt.Errorf("window: want from < to and a positive step, got [%s, %s) step %s", w.From, w.To, w.Step)
		}
		if n := w.To.Sub(w.From) / w.Step; n > 100000 {
			return fmt.Errorf("window: %d windows; use a longer step", n)
		}
	}
	return nil
}

// shard is one part of a batch.
type shard struct {
	name   string
	value  any // bound to {shard}
	window *span
}

type span struct{ from, to time.Time }

// shards lists the batch's shards; query shards are read from the database.
func (b *Batch) shards(ctx context.Context, d driver.Driver) ([]shard, error) {
	switch {
	case b.Shards.Values != nil:
		out := make([]shard, len(b.Shards.Values))
		for i, v := range b.Shards.Values {
			out[i] = shard{name: v, value: v}
		}
		return out, nil
	case b.Shards.Query != "":
		rows, err := d.DB().QueryContext(ctx, b.Shards.Query)
		if err != nil {
			return nil, fmt.Errorf("batch %s: shard query: %w", b.Name, err)
		}
		defer rows.Close()
		var out []shard
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				return nil, fmt.Errorf("batch %s: shard query: %w", b.Name, err)
			}
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			out = append(out, shard{name: fmt.Sprint(v), value: v})
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("batch %s: shard query: %w", b.Name, err)
		}
		return out, nil
	case b.Shards.Window != nil:
		w := b.Shards.Window
		var out []shard
		for from := w.From; from.Before(w.To); from = from.Add(w.Step) {
			to := from.Add(w.Step)
			if to.After(w.To) {
				to = w.To
			}
			out = append(out, shard{name: from.UTC().Format(time.RFC3339Nano), window: &span{from, to}})
		}
		return out, nil
	}
	return []shard{{name: "all"}}, nil
}

// Run processes every shard that is not done, up to Parallel at once,
// each from its checkpoint. It returns when all are done, or with the
// first shard's error after the others stop: ErrPaused, ErrBusy or a
// shard's failure.
func (b *Batch) Run(ctx context.Context, d driver.Driver) error {
	if err := b.Validate(); err != nil {
		return err
	}
	shards, err := b.shards(ctx, d)
	if err != nil {
		return err
	}
	p := newProgressTracker(b)
	if err := p.preload(ctx, d, shards); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, b.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, s := range shards {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r := &shardRun{b: b, d: d.Dialect(), drv: d, shard: s, progress: p, transient: b.transientFunc(d)}
			if err := r.run(ctx); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if errors.Is(err, ErrPaused) || errors.Is(err, ErrBusy) || errors.Is(err, ErrLost) {
					cancel(err) // not a failure: the other shards stop as they are
				} else {
					cancel(&shardFailed{shard: s.name, err: err})
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
