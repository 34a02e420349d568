package batch

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Progress is a snapshot of a run, given to Batch.Progress.
type Progress struct {
	Batch string
	Shard string // the shard that moved
	// Rows counts rows done in all shards, including those done by
	// earlier runs; RunRows only those of this run.
	Rows, RunRows int64
	ShardRows     int64
	Chunks        int64 // chunks done by this run
	ChunkSize     int   // the size of the shard's last chunk
	LastChunk     time.Duration
	Rate          float64       // rows per second in this run
	Total         int64         // with CountTotal, the rows of every shard, done or to do; else 0
	ETA           time.Duration // with Total, the time left at Rate; else 0
	Throttled     string        // why the shard is waiting; "" when it is not
	ShardDone     bool
}

// tracker adds up the shards' progress and calls Batch.Progress, one call
// at a time.
type tracker struct {
	mu      sync.Mutex
	b       *Batch
	start   time.Time
	shards  map[string]int64
	base    int64 // rows done before this run
	run     int64
	chunks  int64
	total   int64
	current Progress
}

func newProgressTracker(b *Batch) *tracker {
	return &tracker{b: b, start: time.Now(), shards: map[string]int64{}}
}

// preload records every shard's rows done before this run (and, with
// CountTotal, its total: those rows plus a count of the rest) before any
// shard starts, so that Rows and Total do not jump as shards start and a
// bar does not fall back from 100%. The run's rate counts from here.
func (t *tracker) preload(ctx context.Context, d driver.Driver, shards []shard) error {
	cps, err := Checkpoints(ctx, d, t.b.Name)
	if err != nil {
		return err
	}
	byShard := map[string]Checkpoint{}
	for _, c := range cps {
		byShard[c.Shard] = c
	}
	for _, s := range shards {
		c := byShard[s.name]
		t.shards[s.name] = c.RowsDone
		t.base += c.RowsDone
		if !t.b.CountTotal {
			continue
		}
		t.total += c.RowsDone
		if c.Status == StatusDone {
			continue
		}
		r := &shardRun{b: t.b, d: d.Dialect(), drv: d, shard: s}
		cursor, err := decodeCursor(c.Cursor, len(t.b.Key))
		if err != nil {
			return err
		}
		n, err := r.count(ctx, cursor)
		if err != nil {
			return err
		}
		t.total += n
	}
	t.start = time.Now()
	return nil
}

// startShard records the rows a shard had done when it started, unless
// preload did.
func (t *tracker) startShard(shard string, done int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.shards[shard]; !ok {
		t.shards[shard] = done
		t.base += done
	}
}

func (t *tracker) chunk(shard string, n, size int, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shards[shard] += int64(n)
	t.run += int64(n)
	t.chunks++
	t.emit(Progress{Shard: shard, ChunkSize: size, LastChunk: took})
}

func (t *tracker) throttled(shard, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emit(Progress{Shard: shard, Throttled: why})
}

func (t *tracker) shardDone(shard string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emit(Progress{Shard: shard, ShardDone: true})
}

// emit fills in the totals; the caller holds mu.
func (t *tracker) emit(p Progress) {
	if t.b.Progress == nil {
		return
	}
	p.Batch = t.b.Name
	p.Rows, p.RunRows, p.ShardRows, p.Chunks, p.Total = t.base+t.run, t.run, t.shards[p.Shard], t.chunks, t.total
	if secs := time.Since(t.start).Seconds(); secs > 0 {
		p.Rate = float64(t.run) / secs
	}
	if p.Total > 0 && p.Rate > 0 && p.Total > p.Rows {
		p.ETA = time.Duration(float64(p.Total-p.Rows) / p.Rate * float64(time.Second))
	}
	t.b.Progress(p)
}
