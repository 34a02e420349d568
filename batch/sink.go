package batch

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// SQLSink runs its statements per chunk, in order, in the chunk's
// transaction, so that they and the checkpoint commit together: an archive
// is an INSERT ... SELECT into the archive table followed by the DELETE.
// In a statement:
//
//   - {column} becomes the chunk's values of that column as a list of bind
//     parameters, for an IN list:
//     UPDATE orders SET status = 'closed' WHERE id IN ({id})
//     and {ids} is the values of the last key column (the unique
//     tiebreaker, usually id). An IN list of bound values works the same
//     on all three databases and uses the primary key index; VALUES lists
//     and temporary tables differ per database and cost extra statements
//     per chunk. Chunks are bounded by MaxChunkLimit so the list fits
//     every database's limit on bind parameters.
//   - {min:column} and {max:column} become the chunk's first and last
//     value of the key column, for a range:
//     DELETE FROM orders WHERE id BETWEEN {min:id} AND {max:id} AND created_at < '2025-01-01'
//     They need a key of that one column, so that the range holds no row
//     of another chunk. The range also holds the rows the source filters
//     out, so the statement repeats the source's filter; and it holds rows
//     that came to match since the chunk was read, so a range suits rows
//     that no longer change, such as old ones past a cutoff.
type SQLSink struct {
	Statements []string
}

// markerPattern matches {column}, {min:column} and {max:column}.
var markerPattern = regexp.MustCompile(`\{(?:(min|max):)?([A-Za-z_][A-Za-z0-9_]*)\}`)

// InTx is true: the statements run in the chunk's transaction.
func (SQLSink) InTx() bool { return true }

// Check reports a sink that cannot run with the batch's key: no
// statement, or a range marker on anything but a one-column key.
func (s SQLSink) Check(key []string) error {
	if len(s.Statements) == 0 {
		return errors.New("sql sink: no statement")
	}
	for i, st := range s.Statements {
		if err := CheckStatement(st, key); err != nil {
			return fmt.Errorf("sql sink statement %d: %w", i+1, err)
		}
	}
	return nil
}

// CheckStatement checks one SQL sink statement against the batch's key.
func CheckStatement(st string, key []string) error {
	if strings.TrimSpace(st) == "" {
		return errors.New("empty statement")
	}
	for _, m := range markerPattern.FindAllStringSubmatch(st, -1) {
		if m[1] == "" {
			continue
		}
		if len(key) != 1 || key[0] != m[2] {
			return fmt.Errorf("{%s:%s} needs the batch's key to be [%s] alone (key: [%s]), so that the range holds this chunk's rows and no other's",
				m[1], m[2], m[2], strings.Join(key, ", "))
		}
	}
	return nil
}

// Write runs the statements with the chunk's values bound.
func (s SQLSink) Write(ctx context.Context, c *Chunk) error {
	for i, st := range s.Statements {
		q, err := expand(st, c)
		if err != nil {
			return err
		}
		if _, err := c.Tx.ExecContext(ctx, q.sql.String(), q.args...); err != nil {
			return fmt.Errorf("sql sink statement %d: %w", i+1, err)
		}
	}
	return nil
}

func expand(st string, c *Chunk) (*query, error) {
	q := &query{d: c.d}
	rest := st
	for {
		loc := markerPattern.FindStringSubmatchIndex(rest)
		if loc == nil {
			q.sql.WriteString(rest)
			return q, nil
		}
		q.sql.WriteString(rest[:loc[0]])
		col := rest[loc[4]:loc[5]]
		vals, err := c.column(col)
		if err != nil {
			return nil, err
		}
		switch {
		case loc[2] < 0:
			for i, v := range vals {
				if i > 0 {
					q.sql.WriteString(", ")
				}
				q.sql.WriteString(q.bind(v))
			}
		case rest[loc[2]:loc[3]] == "min":
			q.sql.WriteString(q.bind(vals[0])) // rows come in key order
		default:
			q.sql.WriteString(q.bind(vals[len(vals)-1]))
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

// CopySink copies each chunk's rows into Table on another database (Dest),
// then runs Then, such as an SQLSink that deletes them, in the chunk's
// transaction on the source: the usual "move old rows to the archive
// server".
//
// The copy commits on Dest before the source's transaction commits, so a
// crash between the two repeats the chunk. The repeat writes nothing
// twice: every INSERT ends with the destination's skip-duplicates clause
// (ON CONFLICT DO NOTHING; ON DUPLICATE KEY UPDATE col = col on MySQL),
// so Table needs a primary or unique key over the batch's key columns
// (usually its id), and a row whose key is already there is taken as
// already copied. Each row is then archived once and deleted once.
type CopySink struct {
	Dest  driver.Driver
	Table string // table or schema.table on Dest
	// Columns are the source columns copied, under the same names; default
	// all of the source's.
	Columns []string
	// Then runs in the chunk's source transaction after the copy has
	// committed; it must be an in-transaction sink (SQLSink, FuncSink).
	Then Sink
}

// InTx is true: Then runs in the chunk's transaction, and the copy
// commits on Dest before it.
func (CopySink) InTx() bool { return true }

// Check reports a copy sink that cannot run.
func (s CopySink) Check(key []string) error {
	if s.Dest == nil {
		return errors.New("copy sink: no destination database")
	}
	if err := s.CheckNames(); err != nil {
		return err
	}
	if s.Then == nil {
		return nil
	}
	if !s.Then.InTx() {
		return errors.New("copy sink: then must write in the chunk's transaction (an SQL or Func sink)")
	}
	if c, ok := s.Then.(checker); ok {
		return c.Check(key)
	}
	return nil
}

// CheckNames checks the table's and the columns' names, which are written
// into the INSERT.
func (s CopySink) CheckNames() error {
	for _, part := range strings.Split(s.Table, ".") {
		if err := CheckIdent(part); err != nil {
			return fmt.Errorf("copy sink: table %q: want table or schema.table of plain identifiers", s.Table)
		}
	}
	for _, col := range s.Columns {
		if err := CheckIdent(col); err != nil {
			return fmt.Errorf("copy sink: %w", err)
		}
	}
	return nil
}

// maxCopyParams bounds the bind parameters of one INSERT, under SQLite's
// 32766 (MySQL and PostgreSQL allow 65535).
const maxCopyParams = 30000

// Write copies the rows in one destination transaction, then runs Then.
func (s CopySink) Write(ctx context.Context, c *Chunk) error {
	cols := s.Columns
	if len(cols) == 0 {
		cols = c.Columns
	}
	if err := s.copy(ctx, c, cols); err != nil {
		if s.Dest.IsTransient(err) {
			return Retryable(err)
		}
		return err
	}
	if s.Then == nil {
		return nil
	}
	return s.Then.Write(ctx, c)
}

func (s CopySink) copy(ctx context.Context, c *Chunk, cols []string) error {
	dd := s.Dest.Dialect()
	var head strings.Builder
	head.WriteString("INSERT INTO ")
	for i, part := range strings.Split(s.Table, ".") {
		if i > 0 {
			head.WriteString(".")
		}
		head.WriteString(dd.QuoteIdent(part))
	}
	head.WriteString(" (")
	vals := make([][]any, len(cols))
	for i, col := range cols {
		if i > 0 {
			head.WriteString(", ")
		}
		head.WriteString(dd.QuoteIdent(col))
		v, err := c.column(col)
		if err != nil {
			return fmt.Errorf("copy sink: %w", err)
		}
		vals[i] = v
	}
	head.WriteString(") VALUES ")
	tail := dd.SkipDuplicates(cols[0])

	tx, err := s.Dest.DB().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("copy sink: begin on destination: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	per := max(1, maxCopyParams/len(cols))
	for from := 0; from < len(c.Rows); from += per {
		to := min(len(c.Rows), from+per)
		q := &query{d: dd}
		q.sql.WriteString(head.String())
		for r := from; r < to; r++ {
			if r > from {
				q.sql.WriteString(", ")
			}
			q.sql.WriteString("(")
			for i := range cols {
				if i > 0 {
					q.sql.WriteString(", ")
				}
				q.sql.WriteString(q.bind(vals[i][r]))
			}
			q.sql.WriteString(")")
		}
		q.sql.WriteString(tail)
		if _, err := tx.ExecContext(ctx, q.sql.String(), q.args...); err != nil {
			return fmt.Errorf("copy sink: insert into %s: %w", s.Table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("copy sink: commit on destination: %w", err)
	}
	return nil
}

// checker is a sink that can check itself against the batch's key before
// the run starts, so that a bad statement fails before any chunk.
type checker interface {
	Check(key []string) error
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
