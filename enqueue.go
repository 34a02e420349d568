package sluice

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// EnqueueParams describes one job. Only Type is required; the rest default
// from the job type's configuration.
type EnqueueParams struct {
	Type string
	// Key is the business key that deduplicates the job; "" for none.
	Key string
	// Payload is marshalled to JSON; json.RawMessage and []byte are used
	// as they are, after a validity check. nil means {}.
	Payload  any
	Queue    string
	Priority int // lower runs first
	Delay    time.Duration
	RunAt    time.Time // overrides Delay when set
	// Deadline, if set, is when the job must have started by: it is
	// never started later, and maintenance cancels it with that reason.
	// It must be after the job is due, and so in the future, by the
	// Config.Clock. Zero means the type's Deadline, if any.
	Deadline time.Time
	// ProgressTimeout, if positive, is the job's own progress timeout: a
	// running attempt that reports no progress for this long is stuck,
	// and its type's OnStuck applies (docs/guarantees.md "Stuck jobs").
	// Zero means the type's ProgressTimeout, if any; negative is an
	// error.
	ProgressTimeout time.Duration
	MaxAttempts     int
	Dedupe          string // "permanent" or "active"
	// Partition is the job's fairness key, such as a tenant id: a fair
	// queue takes turns between partitions, and concurrency limits can cap
	// each partition's running jobs. "" for none; see sluicetype.CheckPartition
	// for what it may contain.
	Partition string
}

// EnqueueResult is the outcome of enqueuing one job.
type EnqueueResult struct {
	ID        int64 `json:"id"`
	Duplicate bool  `json:"duplicate"`
	// Warnings name what will keep the job waiting though it was
	// accepted: a queue that nothing runs (see queueWarnings).
	Warnings []string `json:"warnings,omitempty"`
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
	warned := c.queueWarnings(ctx, rows)
	out := make([]EnqueueResult, len(res))
	queues := map[string]bool{}
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Duplicate: r.Duplicate}
		if w, ok := warned[rows[i].Queue]; ok {
			out[i].Warnings = []string{w}
		}
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
// Each type is named once per client: a server taking a stream of such
// enqueues logs one line, not one per request.
func (c *Client) warnUnknownTypes(rows []driver.InsertJob) {
	if len(c.cfg.Types) == 0 {
		return
	}
	for _, r := range rows {
		if _, ok := c.cfg.Types[r.Type]; ok {
			continue
		}
		if c.firstWarning(r.Type) {
			c.log.Warn("enqueued a job of a type the config does not declare: no worker with this config runs it", "type", r.Type, "queue", r.Queue)
		}
	}
}

// queueWarnings warns, by queue, of the queues of rows that this client's
// config does not list and that no process has claimed from within
// HandlerWindow (ServeQueues): a job sent there, as by Laravel's
// ->onQueue('emails'), is accepted and would wait unseen. A queue another
// process serves, whose config this one cannot see, is not warned of.
// Each queue is logged once per client, as unknown types are; the answer
// carries the warning every time. A failed check is logged and warns of
// nothing: the jobs are in.
func (c *Client) queueWarnings(ctx context.Context, rows []driver.InsertJob) map[string]string {
	known := c.configQueues()
	var unlisted []string
	for _, r := range rows {
		if !known[r.Queue] && !slices.Contains(unlisted, r.Queue) {
			unlisted = append(unlisted, r.Queue)
		}
	}
	if len(unlisted) == 0 {
		return nil
	}
	served, err := c.drv.ServedQueues(ctx, driver.UnservedQueuesParams{Within: HandlerWindow})
	if err != nil {
		c.log.Warn("enqueue: reading which queues are served failed", "err", err)
		return nil
	}
	out := map[string]string{}
	for _, q := range unlisted {
		if slices.Contains(served, q) {
			continue
		}
		out[q] = fmt.Sprintf("queue %s: no config here lists it and no worker or pass has claimed from it in the last %s; its jobs wait until one runs it",
			q, strings.TrimSuffix(HandlerWindow.String(), "0m0s"))
		if c.firstWarning("queue\x00" + q) {
			c.log.Warn("enqueued a job to a queue nothing runs: no config here lists it and no worker or pass has claimed from it lately",
				"queue", q, "within", HandlerWindow.String())
		}
	}
	return out
}

// maxWarnedTypes bounds the unknown types a client remembers having
// warned of, so that enqueues of ever new type names cannot grow it
// without end; past it, each such enqueue warns again.
const maxWarnedTypes = 1000

// firstWarning reports whether typ (or a queue, as "queue\x00" + name)
// has not been warned of before.
func (c *Client) firstWarning(typ string) bool {
	c.warnedMu.Lock()
	defer c.warnedMu.Unlock()
	if c.warned[typ] {
		return false
	}
	if c.warned == nil {
		c.warned = map[string]bool{}
	}
	if len(c.warned) < maxWarnedTypes {
		c.warned[typ] = true
	}
	return true
}

// prepare fills in a job's type's defaults and applies the rules
// (rules.go).
func (c *Client) prepare(p EnqueueParams) (driver.InsertJob, error) {
	if err := checkName("type", p.Type, sluicetype.MaxTypeLen); err != nil {
		return driver.InsertJob{}, err
	}
	t := c.typeOf(p.Type)
	row := driver.InsertJob{Type: p.Type, Key: p.Key, Queue: p.Queue, Priority: p.Priority,
		MaxAttempts: p.MaxAttempts, Dedupe: p.Dedupe, RunAt: p.RunAt, Delay: p.Delay, Partition: p.Partition,
		Deadline: p.Deadline, ProgressTimeout: p.ProgressTimeout}
	if row.Queue == "" {
		row.Queue = t.Queue
	}
	if row.MaxAttempts == 0 {
		row.MaxAttempts = t.MaxAttempts
	}
	if row.Dedupe == "" {
		row.Dedupe = t.Dedupe
	}
	if row.Deadline.IsZero() {
		row.DeadlineAfter = t.Deadline
	}
	payload, err := checkJob(p, row, c.cfg.Clock())
	row.Payload = payload
	return row, err
}
