package batch

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

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
	d    dialect
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
// with Idempotency-Key batch:<name>:<shard>:<cursor before> and, when
// Secret is set, X-Sluice-Signature as for job webhooks. A 2xx reply
// advances the checkpoint; 408, 429, 5xx and network errors retry the
// chunk; other statuses fail the shard. Delivery is at-least-once: a crash
// after the reply and before the checkpoint sends that chunk again, with
// the same key.
type HTTPSink struct {
	URL     string
	Secret  string
	Timeout time.Duration // per request; default 30s
	Headers map[string]string
	Client  *http.Client // default http.DefaultClient
}

// InTx is false: the receiver is outside the database.
func (HTTPSink) InTx() bool { return false }

// Write delivers the chunk.
func (s HTTPSink) Write(ctx context.Context, c *Chunk) error {
	body, err := json.Marshal(struct {
		Batch        string `json:"batch"`
		Shard        string `json:"shard"`
		CursorBefore string `json:"cursor_before"`
		Rows         []Row  `json:"rows"`
	}{c.Batch, c.Shard, c.CursorBefore, c.Rows})
	if err != nil {
		return fmt.Errorf("http sink: encode rows: %w", err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = webhook.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("http sink: %w", err)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", c.IdempotencyKey())
	if s.Secret != "" {
		req.Header.Set("X-Sluice-Signature", webhook.Sign(s.Secret, time.Now(), body))
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Retryable(fmt.Errorf("http sink: %w", err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return Retryable(fmt.Errorf("http sink: %s: %s", resp.Status, bytes.TrimSpace(msg)))
	default:
		return fmt.Errorf("http sink: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
}
