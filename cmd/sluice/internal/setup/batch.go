package setup

import (
	"fmt"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/driver"
)

// checkBatch applies the batch package's rules on names, columns and SQL
// to the file's batch name.
func checkBatch(f *config.File, name string) error {
	path := "batches." + name
	b := f.Batches[name]
	if err := batch.CheckName(name); err != nil {
		return f.ErrorAt(path, err)
	}
	if err := batch.CheckSource(b.Source); err != nil {
		return f.ErrorAt(path+".source", err)
	}
	for i, k := range b.Key {
		if err := batch.CheckIdent(k); err != nil {
			return f.ErrorAt(fmt.Sprintf("%s.key[%d]", path, i), err)
		}
	}
	if s := b.Shards; s != nil {
		for i, v := range s.Values {
			if err := batch.CheckName(v); err != nil {
				return f.ErrorAt(fmt.Sprintf("%s.shards.values[%d]", path, i), err)
			}
		}
		if s.Values == nil && s.Query == "" {
			if err := batch.CheckIdent(s.Column); err != nil {
				return f.ErrorAt(path+".shards.column", err)
			}
		}
	}
	sink := b.Sink
	if sink.HTTP != nil {
		return checkHTTP(f, path+".sink.http", sink.HTTP)
	}
	for i, st := range sink.SQL {
		if err := batch.CheckStatement(st, b.Key); err != nil {
			return f.ErrorAt(fmt.Sprintf("%s.sink.sql[%d]", path, i), err)
		}
	}
	if c := sink.Copy; c != nil {
		if err := (batch.CopySink{Table: c.Table, Columns: c.Columns}).CheckNames(); err != nil {
			return f.ErrorAt(path+".sink.copy", err)
		}
	}
	return checkChunk(f, path+".chunk", b.Chunk)
}

func checkChunk(f *config.File, path string, c config.BatchChunk) error {
	if c.Size > batch.MaxChunkLimit {
		return f.ErrorAt(path+".size", fmt.Errorf("at most %d, got %d", batch.MaxChunkLimit, c.Size))
	}
	lo, hi := c.Min, c.Max
	if lo == 0 {
		lo = batch.DefaultMinChunk
	}
	if hi == 0 {
		hi = batch.DefaultMaxChunk
	}
	if lo > hi || hi > batch.MaxChunkLimit {
		return f.ErrorAt(path, fmt.Errorf("want min (%d) <= max (%d) <= %d", lo, hi, batch.MaxChunkLimit))
	}
	return nil
}

// Batch builds the batch named name from its entry, with defaults left
// for batch.Validate to fill. open opens a copy sink's destination URL.
func Batch(name string, b config.Batch, open func(url string) (driver.Driver, error)) (*batch.Batch, error) {
	out := &batch.Batch{
		Name:                name,
		Source:              b.Source,
		Key:                 b.Key,
		ChunkSize:           b.Chunk.Size,
		TargetChunkDuration: b.Chunk.Target,
		MinChunk:            b.Chunk.Min,
		MaxChunk:            b.Chunk.Max,
		Throttle: batch.Throttle{Sleep: b.Throttle.Sleep, MaxRowsPerSec: float64(b.Throttle.MaxRowsPerS),
			Query: b.Throttle.Query, Threshold: float64(b.Throttle.Threshold), Poll: b.Throttle.PollInterval},
		Retry:    batch.Retry{Attempts: b.Retry.Attempts, Base: b.Retry.Base, Max: b.Retry.Max},
		Parallel: b.Parallel,
		Lease:    b.Lease,
	}
	if s := b.Shards; s != nil {
		switch {
		case s.Values != nil:
			out.Shards.Values = s.Values
		case s.Query != "":
			out.Shards.Query = s.Query
		default:
			out.Shards.Window = &batch.Window{Column: s.Column, From: s.FromTime, To: s.ToTime, Step: s.Step}
		}
	}
	s := b.Sink
	switch {
	case s.HTTP != nil:
		out.Sink = batch.HTTPSink{URL: s.HTTP.URL, Secret: s.HTTP.Secret, Timeout: s.HTTP.Timeout, Headers: s.HTTP.Headers}
	case s.Copy != nil:
		dest, err := open(s.Copy.DB)
		if err != nil {
			return nil, fmt.Errorf("batch %s: copy destination: %w", name, err)
		}
		c := batch.CopySink{Dest: dest, Table: s.Copy.Table, Columns: s.Copy.Columns}
		if len(s.SQL) > 0 {
			c.Then = batch.SQLSink{Statements: s.SQL}
		}
		out.Sink = c
	default:
		out.Sink = batch.SQLSink{Statements: s.SQL}
	}
	return out, nil
}
