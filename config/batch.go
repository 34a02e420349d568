package config

import (
	"fmt"
	"strings"
	"time"
)

// Batch is one resumable keyset batch (see package batch).
type Batch struct {
	// Source is a SELECT without ORDER BY or LIMIT; with value or query
	// shards it contains {shard}.
	Source   string        `yaml:"source"`
	Key      []string      `yaml:"key"` // plain column names, such as [created_at, id]
	Shards   *BatchShards  `yaml:"shards"`
	Sink     BatchSink     `yaml:"sink"`
	Chunk    BatchChunk    `yaml:"chunk"`
	Throttle BatchThrottle `yaml:"throttle"`
	Retry    BatchRetry    `yaml:"retry"`
	Parallel int           `yaml:"parallel"` // shards at once; 0: 1
	Lease    time.Duration `yaml:"lease"`    // 0: batch.DefaultLease
}

// BatchShards sets one of Values, Query or Column with From, To and Step.
type BatchShards struct {
	Values []string      `yaml:"values"`
	Query  string        `yaml:"query"`
	Column string        `yaml:"column"`
	From   string        `yaml:"from"` // RFC 3339 time or YYYY-MM-DD, UTC
	To     string        `yaml:"to"`
	Step   time.Duration `yaml:"step"`
	// FromTime and ToTime are From and To, parsed.
	FromTime time.Time `yaml:"-"`
	ToTime   time.Time `yaml:"-"`
}

// BatchSink sets SQL, Copy, Copy with SQL (copy, then delete), or HTTP.
type BatchSink struct {
	// SQL runs per chunk, statement by statement, in the chunk's
	// transaction; {column}, {ids}, {min:column} and {max:column} become
	// the chunk's values (see batch.SQLSink).
	SQL  Statements `yaml:"sql"`
	Copy *BatchCopy `yaml:"copy"`
	HTTP *HTTP      `yaml:"http"`
}

// Statements is one SQL statement or a list of them.
type Statements []string

// BatchCopy copies each chunk's rows into a table on another database,
// before SQL runs on the source (see batch.CopySink).
type BatchCopy struct {
	DB      string   `yaml:"db"`      // the destination's database URL
	Table   string   `yaml:"table"`   // with a primary or unique key over the batch's key
	Columns []string `yaml:"columns"` // default: every source column
}

// BatchChunk sets a fixed Size or an adaptive Target between Min and Max.
type BatchChunk struct {
	Size   int           `yaml:"size"`
	Target time.Duration `yaml:"target"`
	Min    int           `yaml:"min"`
	Max    int           `yaml:"max"`
}

// BatchThrottle slows a batch down; see batch.Throttle.
type BatchThrottle struct {
	Sleep        time.Duration `yaml:"sleep"`
	MaxRowsPerS  int           `yaml:"max_rows_per_s"`
	Query        string        `yaml:"query"`
	Threshold    int           `yaml:"threshold"`
	PollInterval time.Duration `yaml:"poll"`
}

// BatchRetry bounds the retries of a chunk after a transient error.
type BatchRetry struct {
	Attempts int           `yaml:"attempts"`
	Base     time.Duration `yaml:"base"`
	Max      time.Duration `yaml:"max"`
}

// validateBatch checks the batch's shape; the batch package's rules on its
// names and SQL are checked where the batch is built.
func (d *decoder) validateBatch(name string, b *Batch) error {
	path := "batches." + name
	if len(b.Key) == 0 {
		return d.failf(path+".key", "required: the columns that order the rows, such as [id] or [created_at, id]")
	}
	seen := map[string]bool{}
	for i, k := range b.Key {
		p := fmt.Sprintf("%s.key[%d]", path, i)
		if seen[k] {
			return d.failf(p, "column %s repeated", k)
		}
		seen[k] = true
	}
	if err := d.validateBatchShards(path+".shards", b); err != nil {
		return err
	}
	if err := d.validateBatchSink(path+".sink", b); err != nil {
		return err
	}
	if err := d.validateBatchChunk(path+".chunk", &b.Chunk); err != nil {
		return err
	}
	t := b.Throttle
	for key, v := range map[string]int64{"sleep": int64(t.Sleep), "max_rows_per_s": int64(t.MaxRowsPerS), "threshold": int64(t.Threshold), "poll": int64(t.PollInterval)} {
		if v < 0 {
			return d.failf(path+".throttle."+key, "must not be negative")
		}
	}
	if t.Query == "" && d.set(path+".throttle.threshold") {
		return d.failf(path+".throttle.threshold", "needs throttle.query")
	}
	if b.Retry.Attempts < 0 || b.Retry.Base < 0 || b.Retry.Max < 0 {
		return d.failf(path+".retry", "must not be negative")
	}
	if b.Parallel < 0 {
		return d.failf(path+".parallel", "must not be negative, got %d", b.Parallel)
	}
	if b.Lease < 0 {
		return d.failf(path+".lease", "must not be negative, got %s", b.Lease)
	}
	return nil
}

func (d *decoder) validateBatchSink(path string, b *Batch) error {
	s := b.Sink
	switch {
	case len(s.SQL) == 0 && s.Copy == nil && s.HTTP == nil:
		return d.failf(path, "no sink: set sql: \"UPDATE ... WHERE id IN ({ids})\", copy: {db: ..., table: ...} or http: {url: ...}")
	case s.HTTP != nil && (len(s.SQL) > 0 || s.Copy != nil):
		return d.failf(path, "http is set with sql or copy: an http sink stands alone")
	case s.HTTP != nil:
		return d.validateHTTP(path+".http", s.HTTP)
	}
	if c := s.Copy; c != nil {
		if c.DB == "" {
			return d.failf(path+".copy.db", "required: the destination's database URL")
		}
		if c.Table == "" {
			return d.failf(path+".copy.table", "required: the destination table")
		}
	}
	return nil
}

func (d *decoder) validateBatchShards(path string, b *Batch) error {
	s := b.Shards
	valueShards := s != nil && (s.Values != nil || s.Query != "")
	hasMarker := strings.Contains(b.Source, "{shard}")
	switch {
	case valueShards && !hasMarker:
		return d.failf(path, "value and query shards need {shard} in the source, where the shard's value is bound")
	case !valueShards && hasMarker:
		return d.failf(strings.TrimSuffix(path, ".shards")+".source", "{shard} needs shards: {values: [...]} or {query: ...}")
	case s == nil:
		return nil
	}
	kinds := 0
	if s.Values != nil {
		kinds++
	}
	if s.Query != "" {
		kinds++
	}
	if s.Column != "" || s.From != "" || s.To != "" || s.Step != 0 {
		kinds++
	}
	if kinds != 1 {
		return d.failf(path, "set exactly one of values, query, or column with from, to and step")
	}
	if s.Column == "" && s.From == "" && s.To == "" && s.Step == 0 {
		if s.Values != nil && len(s.Values) == 0 {
			return d.failf(path+".values", "empty list")
		}
		return nil
	}
	var err error
	if s.FromTime, err = parseTime(s.From); err != nil {
		return d.fail(path+".from", err)
	}
	if s.ToTime, err = parseTime(s.To); err != nil {
		return d.fail(path+".to", err)
	}
	if !s.FromTime.Before(s.ToTime) {
		return d.failf(path+".to", "must be after from")
	}
	if s.Step <= 0 {
		return d.failf(path+".step", "required: a positive duration such as 24h")
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid time %q: want RFC 3339 (2024-01-02T00:00:00Z) or a date (2024-01-02), UTC", s)
}

func (d *decoder) validateBatchChunk(path string, c *BatchChunk) error {
	if c.Size != 0 && c.Target != 0 {
		return d.failf(path, "set size or target, not both")
	}
	if c.Size < 0 || c.Min < 0 || c.Max < 0 || c.Target < 0 {
		return d.failf(path, "must not be negative")
	}
	if c.Target == 0 && (c.Min != 0 || c.Max != 0) {
		return d.failf(path, "min and max apply to an adaptive size: set target")
	}
	return nil
}
