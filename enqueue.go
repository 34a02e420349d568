package sluice

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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

// maxWarnedTypes bounds the unknown types a client remembers having
// warned of, so that enqueues of ever new type names cannot grow it
// without end; past it, each such enqueue warns again.
const maxWarnedTypes = 1000

// firstWarning reports whether typ has not been warned of before.
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

// prepare validates one job and fills in its type's defaults.
func (c *Client) prepare(p EnqueueParams) (driver.InsertJob, error) {
	if err := checkName("type", p.Type, sluicetype.MaxTypeLen); err != nil {
		return driver.InsertJob{}, err
	}
	t := c.typeOf(p.Type)
	row := driver.InsertJob{Type: p.Type, Key: p.Key, Queue: p.Queue, Priority: p.Priority,
		MaxAttempts: p.MaxAttempts, Dedupe: p.Dedupe, RunAt: p.RunAt, Delay: p.Delay, Partition: p.Partition}
	if row.Queue == "" {
		row.Queue = t.Queue
	}
	if row.MaxAttempts == 0 {
		row.MaxAttempts = t.MaxAttempts
	}
	if row.Dedupe == "" {
		row.Dedupe = t.Dedupe
	}
	switch {
	case row.MaxAttempts < 1 || row.MaxAttempts > MaxMaxAttempts:
		return row, inputErr("max_attempts", "%d is out of range: want 1 to %d, or 0 for the type's default", p.MaxAttempts, MaxMaxAttempts)
	case row.Priority < MinPriority || row.Priority > MaxPriority:
		return row, inputErr("priority", "%d is out of range: want %d to %d", row.Priority, MinPriority, MaxPriority)
	case row.Dedupe != sluicetype.DedupePermanent && row.Dedupe != sluicetype.DedupeActive:
		return row, inputErr("dedupe", "%q: want permanent or active", row.Dedupe)
	case row.Delay < 0:
		return row, inputErr("delay", "must not be negative")
	case !row.RunAt.IsZero() && row.Delay != 0:
		return row, inputErr("run_at", "give run_at or delay, not both")
	}
	if !row.RunAt.IsZero() {
		if err := checkRunAt(row.RunAt); err != nil {
			return row, err
		}
	}
	if err := checkKey(p.Key); err != nil {
		return row, err
	}
	if err := checkName("queue", row.Queue, sluicetype.MaxQueueLen); err != nil {
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

// Limits of a job request, the same on every path (API, CLI, Go) and every
// database, as docs/reference.md "Job request rules" states them; the
// column widths are sluicetype.MaxTypeLen and its neighbours.
const (
	// MaxPayloadBytes bounds a payload's JSON text.
	MaxPayloadBytes = 1 << 20
	// MaxPayloadDepth bounds a payload's nesting: objects and arrays, the
	// payload object itself counting as one. MariaDB's JSON check refuses
	// 32 (its JSON_DEPTH_LIMIT); MySQL stops at 100, PostgreSQL and SQLite
	// go deeper.
	MaxPayloadDepth = 31
	// MaxMaxAttempts is the largest max_attempts: the column is a 32-bit
	// INTEGER on every database.
	MaxMaxAttempts = math.MaxInt32
	// MinPriority and MaxPriority bound priority: a SMALLINT column.
	MinPriority = math.MinInt16
	MaxPriority = math.MaxInt16
)

// minRunAt and maxRunAt bound run_at: MariaDB's DATETIME ends with year
// 9999, and an earlier time than 1970 is surely a mistake (year 1 is Go's
// zero time, which would otherwise mean "now").
var (
	minRunAt = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxRunAt = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

func checkRunAt(t time.Time) error {
	if t.Before(minRunAt) || t.After(maxRunAt) {
		return inputErr("run_at", "%s is out of range: want %s to %s", t.Format(time.RFC3339Nano),
			minRunAt.Format(time.RFC3339), maxRunAt.Format(time.RFC3339))
	}
	return nil
}

// checkKey is the rule for a business key: "" for none, or up to
// sluicetype.MaxKeyLen characters (counted as the databases count them, not
// in bytes) of valid UTF-8 without NUL, which PostgreSQL refuses in text
// and a command handler cannot pass in its environment.
func checkKey(k string) error {
	switch {
	case !utf8.ValidString(k):
		return inputErr("key", "not valid UTF-8")
	case utf8.RuneCountInString(k) > sluicetype.MaxKeyLen:
		return inputErr("key", "%d characters, at most %d allowed", utf8.RuneCountInString(k), sluicetype.MaxKeyLen)
	case strings.IndexByte(k, 0) >= 0:
		return inputErr("key", "contains a NUL character")
	}
	return nil
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
	}
	// Empty and null are the default {}, as an absent payload is.
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}"), nil
	}
	if err := checkPayload(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkPayload is the one rule for a payload, whichever path it came by:
// a JSON object of at most MaxPayloadBytes and MaxPayloadDepth levels,
// valid UTF-8 without lone surrogates, each member name once per object,
// no NUL character in any string (PostgreSQL's jsonb refuses \u0000) and
// every number within a 64-bit float's range (jsonb refuses 1e1000000).
// Every database stores such a payload, and stores it the same.
func checkPayload(b []byte) error {
	if len(b) > MaxPayloadBytes {
		return inputErr("payload", "%d bytes, at most %d allowed", len(b), MaxPayloadBytes)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	tok, err := dec.ReadToken()
	if err != nil {
		return payloadSyntaxError(err)
	}
	switch tok.Kind() {
	case '{':
	case '"':
		if s := strings.TrimSpace(tok.String()); (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) && json.Valid([]byte(s)) {
			return inputErr("payload", "a JSON string that holds JSON: it looks double-encoded; send the object itself")
		}
		return inputErr("payload", "must be a JSON object, got a string")
	default:
		return inputErr("payload", "must be a JSON object, got %s", jsonKindName(tok.Kind()))
	}
	for dec.StackDepth() > 0 {
		tok, err := dec.ReadToken()
		if err != nil {
			return payloadSyntaxError(err)
		}
		switch tok.Kind() {
		case '{', '[':
			if dec.StackDepth() > MaxPayloadDepth {
				return inputErr("payload", "nested deeper than %d levels of objects and arrays (at %s)", MaxPayloadDepth, fieldOf(prefixed(dec.StackPointer())))
			}
		case '"':
			if strings.IndexByte(tok.String(), 0) >= 0 {
				// A member name is read as a string token too (an odd count
				// in its object); it is reported against its object.
				at, what := dec.StackPointer(), "value"
				if k, n := dec.StackIndex(dec.StackDepth()); k == '{' && n%2 == 1 {
					at, what = at.Parent(), "member name"
				}
				return inputErr(fieldOf(prefixed(at)), "a %s contains a NUL character (\\u0000), which PostgreSQL cannot store", what)
			}
		case '0':
			if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
				return inputErr(fieldOf(prefixed(dec.StackPointer())), "the number %s is out of range: want one a 64-bit float holds", tok.String())
			}
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return inputErr("payload", "must hold exactly one JSON value")
	}
	return nil
}

// prefixed roots a pointer inside the payload at the payload field.
func prefixed(p jsontext.Pointer) jsontext.Pointer { return "/payload" + p }

func payloadSyntaxError(err error) error {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return inputErr(fieldOf(prefixed(syn.JSONPointer)), "not valid JSON text at byte offset %d: %v", syn.ByteOffset, syn.Err)
	}
	return inputErr("payload", "not valid JSON: %v", err)
}
