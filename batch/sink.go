package batch

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/webhook"
)

// Chunk is one chunk of rows handed to a sink.
type Chunk struct {
	Batch, Shard string
	// Tx is the chunk's transaction for a sink whose InTx is true: the
	// checkpoint is written in it after Write returns. Nil otherwise.
	Tx      *sql.Tx
	Columns []string
	Rows    []Row
	// CursorBefore is the checkpoint cursor the chunk starts after ("" for
	// the first chunk); with the batch and shard it names the chunk.
	CursorBefore string
	Key          []string

	keys [][]any // each row's key values, as bound in the keyset query
	d    driver.Dialect
}

// IdempotencyKey names the chunk: batch:<name>:<shard>:<cursor before>.
// A chunk repeated after a crash has the same key.
func (c *Chunk) IdempotencyKey() string {
	return "batch:" + c.Batch + ":" + c.Shard + ":" + c.CursorBefore
}

// Sink receives chunks.
type Sink interface {
	// InTx reports whether Write writes through Chunk.Tx, so that its
	// writes and the checkpoint commit together.
	InTx() bool
	// Write handles one chunk. An error marked with Retryable, or one the
	// database reports as transient, retries the chunk; any other fails
	// the shard.
	Write(ctx context.Context, c *Chunk) error
}

// FuncSink is a Go function that writes a chunk in the chunk's transaction.
type FuncSink func(ctx context.Context, tx *sql.Tx, rows []Row) error

// InTx is true: the function gets the chunk's transaction.
func (FuncSink) InTx() bool { return true }

// Write calls f.
func (f FuncSink) Write(ctx context.Context, c *Chunk) error { return f(ctx, c.Tx, c.Rows) }

// SQLSink runs one statement per chunk in the chunk's transaction. In the
// statement, {column} becomes the chunk's values of that column as a list
// of bind parameters, for an IN list:
//
//	UPDATE orders SET status = 'closed' WHERE id IN ({id})
//
// and {ids} is the values of the last key column (the unique tiebreaker,
// usually id). An IN list of bound values works the same on all three
// databases and uses the primary key index; VALUES lists and temporary
// tables differ per database and cost extra statements per chunk. Chunks
// are bounded by MaxChunkLimit so the list fits every database's limit on
// bind parameters.
type SQLSink struct {
	Statement string
}

var markerPattern = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// InTx is true: the statement runs in the chunk's transaction.
func (SQLSink) InTx() bool { return true }

// Write runs the statement with the chunk's values bound.
func (s SQLSink) Write(ctx context.Context, c *Chunk) error {
	q, err := s.expand(c)
	if err != nil {
		return err
	}
	if _, err := c.Tx.ExecContext(ctx, q.sql.String(), q.args...); err != nil {
		return fmt.Errorf("sql sink: %w", err)
	}
	return nil
}

func (s SQLSink) expand(c *Chunk) (*query, error) {
	q := &query{d: c.d}
	rest := s.Statement
	for {
		loc := markerPattern.FindStringSubmatchIndex(rest)
		if loc == nil {
			q.sql.WriteString(rest)
			return q, nil
		}
		q.sql.WriteString(rest[:loc[0]])
		col := rest[loc[2]:loc[3]]
		vals, err := c.column(col)
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if i > 0 {
				q.sql.WriteString(", ")
			}
			q.sql.WriteString(q.bind(v))
		}
		rest = rest[loc[1]:]
	}
}

// column returns one column's values; key columns come as the keyset
// query bound them, which on SQLite is the raw stored value.
func (c *Chunk) column(col string) ([]any, error) {
	if col == "ids" {
		col = c.Key[len(c.Key)-1]
	}
	out := make([]any, len(c.Rows))
	for i, k := range c.Key {
		if k == col {
			for j := range c.Rows {
				out[j] = c.keys[j][i]
			}
			return out, nil
		}
	}
	for j, r := range c.Rows {
		v, ok := r[col]
		if !ok {
			return nil, fmt.Errorf("sql sink: {%s}: no such column in the source (columns: %s)", col, strings.Join(c.Columns, ", "))
		}
		out[j] = v
	}
	return out, nil
}

// HTTPSink POSTs each chunk as JSON:
//
//	{"batch":"...","shard":"...","cursor_before":"...","rows":[{...},...]}
//
// with Idempotency-Key batch:<name>:<shard>:<cursor before>. It delivers
// through the same webhook.Endpoint as job webhooks, so the protocol is
// theirs: signed in X-Sluice-Signature when Secret is set, redirects never
// followed, a 2xx reply advances the checkpoint, 408, 425, 429, 5xx and
// network errors retry the chunk (not before a Retry-After, capped at
// MaxRetryAfter), a redirect or any other 4xx fails the shard. Delivery is
// at-least-once: a crash after the reply and before the checkpoint sends
// that chunk again, with the same key.
type HTTPSink struct {
	URL     string
	Secret  string
	Timeout time.Duration // per request; default webhook.DefaultTimeout
	Headers map[string]string
	Client  *http.Client // default: webhook's shared client
	// MaxRetryAfter caps the wait a Retry-After asks for; default
	// DefaultMaxRetryAfter. The shard's lease is not renewed while the
	// sink waits, so the cap stays well inside DefaultLease.
	MaxRetryAfter time.Duration
}

// DefaultMaxRetryAfter is HTTPSink's default cap on a Retry-After wait.
const DefaultMaxRetryAfter = 15 * time.Second

// InTx is false: the receiver is outside the database.
func (HTTPSink) InTx() bool { return false }

// Write delivers the chunk.
func (s HTTPSink) Write(ctx context.Context, c *Chunk) error {
	maxWait := s.MaxRetryAfter
	if maxWait <= 0 {
		maxWait = DefaultMaxRetryAfter
	}
	ep, err := webhook.NewEndpoint(webhook.Config{URL: s.URL, Timeout: s.Timeout, Secret: s.Secret, Headers: s.Headers,
		Client: s.Client, MaxRetryAfter: maxWait})
	if err != nil {
		return fmt.Errorf("http sink: %w", err)
	}
	body, err := json.Marshal(struct {
		Batch        string `json:"batch"`
		Shard        string `json:"shard"`
		CursorBefore string `json:"cursor_before"`
		Rows         []Row  `json:"rows"`
	}{c.Batch, c.Shard, c.CursorBefore, c.Rows})
	if err != nil {
		return fmt.Errorf("http sink: encode rows: %w", err)
	}
	_, err = ep.Post(ctx, body, c.IdempotencyKey(), nil)
	switch {
	case err == nil:
		return nil
	case sluice.IsPermanent(err):
		return fmt.Errorf("http sink: %w", err)
	}
	if d, ok := sluice.RetryAfterDelay(err); ok {
		// The retry loop knows only its own backoff, so the wait the
		// receiver asked for happens here, before the chunk is retried.
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("http sink: %w", err)
		case <-t.C:
		}
	}
	return Retryable(fmt.Errorf("http sink: %w", err))
}
