package sluice

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/codes"

	"github.com/sluicehq/sluice/driver"
)

// EnqueueParams describes one job. Only Type is required; the rest default
// from the job type's configuration.
type EnqueueParams struct {
	Type string
	// Key is the business key that deduplicates the job; "" for none.
	Key string
	// Payload is marshalled to JSON; json.RawMessage and []byte are used
	// as they are, after a validity check. nil means {}.
	Payload     any
	Queue       string
	Priority    int // lower runs first
	Delay       time.Duration
	RunAt       time.Time // overrides Delay when set
	MaxAttempts int
	Dedupe      string // "permanent" or "active"
	// Partition is the job's fairness key, such as a tenant id: a fair
	// queue takes turns between partitions, and concurrency limits can cap
	// each partition's running jobs. "" for none; see driver.CheckPartition
	// for what it may contain.
	Partition string
}

// EnqueueResult is the outcome of enqueuing one job.
type EnqueueResult struct {
	ID        int64 `json:"id"`
	Duplicate bool  `json:"duplicate"`
}

// Enqueue adds a job. An existing business key is not an error: the
// result holds the existing job's id with Duplicate true.
func (c *Client) Enqueue(ctx context.Context, p EnqueueParams) (EnqueueResult, error) {
	rs, err := c.EnqueueMany(ctx, []EnqueueParams{p})
	if err != nil {
		return EnqueueResult{}, err
	}
	return rs[0], nil
}

// EnqueueTx adds a job inside the caller's transaction, so that it exists
// only if the transaction commits. tx must belong to the client's database.
func (c *Client) EnqueueTx(ctx context.Context, tx *sql.Tx, p EnqueueParams) (EnqueueResult, error) {
	rs, err := c.enqueue(ctx, tx, []EnqueueParams{p})
	if err != nil {
		return EnqueueResult{}, err
	}
	return rs[0], nil
}

// EnqueueMany adds jobs all or nothing, with multi-row inserts where the
// database allows. Results are in the order of ps.
func (c *Client) EnqueueMany(ctx context.Context, ps []EnqueueParams) ([]EnqueueResult, error) {
	return c.enqueue(ctx, nil, ps)
}

// EnqueueManyTx is EnqueueMany inside the caller's transaction.
func (c *Client) EnqueueManyTx(ctx context.Context, tx *sql.Tx, ps []EnqueueParams) ([]EnqueueResult, error) {
	return c.enqueue(ctx, tx, ps)
}

func (c *Client) enqueue(ctx context.Context, tx *sql.Tx, ps []EnqueueParams) ([]EnqueueResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ctx, span := c.startEnqueue(ctx, ps)
	defer span.End()
	traceParent := TraceParent(ctx)
	rows := make([]driver.InsertJob, len(ps))
	for i, p := range ps {
		row, err := c.prepare(p)
		if err != nil {
			if len(ps) > 1 {
				return nil, fmt.Errorf("job %d: %w", i, err)
			}
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
		row.TraceParent = traceParent
		rows[i] = row
	}
	res, err := c.drv.Insert(ctx, driver.InsertParams{Tx: tx, Jobs: rows})
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	c.warnUnknownTypes(rows)
	out := make([]EnqueueResult, len(res))
	queues := map[string]bool{}
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Duplicate: r.Duplicate}
		// Counted when the insert returns: inside a caller's transaction
		// that later rolls back, the count is one too many.
		c.metrics.Enqueued(rows[i].Queue, rows[i].Type, r.Duplicate)
		if !r.Duplicate {
			queues[rows[i].Queue] = true
		}
	}
	if tx == nil && c.pool != nil {
		// A job enqueued here can start here without waiting for a poll.
		for q := range queues {
			c.pool.Notify(q)
		}
	}
	return out, nil
}

// warnUnknownTypes logs the types of rows that the client's config does
// not declare: no worker with this config runs them, a typo's likely sign.
// A client with no types at all (an enqueue-only program) says nothing.
func (c *Client) warnUnknownTypes(rows []driver.InsertJob) {
	if len(c.cfg.Types) == 0 {
		return
	}
	warned := map[string]bool{}
	for _, r := range rows {
		if _, ok := c.cfg.Types[r.Type]; !ok && !warned[r.Type] {
			warned[r.Type] = true
			c.log.Warn("enqueued a job of a type the config does not declare: no worker with this config runs it", "type", r.Type, "queue", r.Queue)
		}
	}
}

// prepare validates one job and fills in its type's defaults.
func (c *Client) prepare(p EnqueueParams) (driver.InsertJob, error) {
	if err := checkName("type", p.Type, driver.MaxTypeLen); err != nil {
		return driver.InsertJob{}, err
	}
	t, known := c.cfg.Types[p.Type]
	row := driver.InsertJob{Type: p.Type, Key: p.Key, Queue: p.Queue, Priority: p.Priority,
		MaxAttempts: p.MaxAttempts, Dedupe: p.Dedupe, RunAt: p.RunAt, Delay: p.Delay, Partition: p.Partition}
	if row.Queue == "" {
		row.Queue = DefaultQueue
		if known {
			row.Queue = t.Queue
		}
	}
	if row.MaxAttempts == 0 {
		row.MaxAttempts = DefaultMaxAttempts
		if known {
			row.MaxAttempts = t.MaxAttempts
		}
	}
	if row.Dedupe == "" {
		row.Dedupe = driver.DedupePermanent
		if known {
			row.Dedupe = t.Dedupe
		}
	}
	switch {
	case !utf8.ValidString(p.Type):
		return row, inputErr("type", "not valid UTF-8")
	case len(p.Key) > driver.MaxKeyLen:
		return row, inputErr("key", "%d characters, at most %d allowed", len(p.Key), driver.MaxKeyLen)
	case !utf8.ValidString(p.Key):
		return row, inputErr("key", "not valid UTF-8")
	case row.MaxAttempts < 1:
		return row, inputErr("max_attempts", "must be at least 1")
	case row.Priority < -32768 || row.Priority > 32767:
		return row, inputErr("priority", "must be between -32768 and 32767")
	case row.Dedupe != driver.DedupePermanent && row.Dedupe != driver.DedupeActive:
		return row, inputErr("dedupe", "%q: want permanent or active", row.Dedupe)
	case row.Delay < 0:
		return row, inputErr("delay", "must not be negative")
	case !row.RunAt.IsZero() && row.Delay != 0:
		return row, inputErr("run_at", "give run_at or delay, not both")
	}
	if err := checkName("queue", row.Queue, driver.MaxQueueLen); err != nil {
		return row, err
	}
	if err := driver.CheckPartition(row.Partition); err != nil {
		return row, inputErr("partition", "%v", err)
	}
	payload, err := encodePayload(p.Payload)
	if err != nil {
		return row, err
	}
	row.Payload = payload
	return row, nil
}

func encodePayload(v any) ([]byte, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, inputErr("payload", "cannot encode as JSON: %v", err)
		}
		return b, nil
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return []byte("{}"), nil
	}
	if !json.Valid(b) {
		return nil, inputErr("payload", "not valid JSON")
	}
	return b, nil
}
