package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// The start rates of types and partitions (driver.RunningCaps TypeRates,
// PartitionRate) are token buckets in sluice_rate_buckets that the limited
// claim locks, refills and debits inside its own transaction: the tokens
// it takes are exactly the jobs it claims, and a claim that rolls back
// takes none. Every bucket a claim locks is locked only by claims that
// hold the same claim-state row first (the types row for a type's bucket,
// the queue's row for a partition's), so they wait in one order.

// refill is the one rule of a bucket's refill: tokens written at time at,
// refilled at r.PerSecond up to r.Burst by now, and the time to write back
// with them. The refill never runs back: now may have been read before the
// row lock was granted (and PostgreSQL's now() is the transaction's start),
// so a taker that waited may hold an earlier time than the row's; writing
// that earlier time back would credit the same span twice.
func refill(tokens float64, at, now time.Time, r driver.Rate) (float64, time.Time) {
	if d := now.Sub(at); d > 0 {
		tokens += d.Seconds() * r.PerSecond
	} else {
		now = at
	}
	return min(tokens, float64(r.Burst)), now
}

// heldBucket is a rate bucket locked by a claim, refilled to the claim's
// database time.
type heldBucket struct {
	rate   driver.Rate
	tokens float64
	at     time.Time
	taken  int
}

// room is how many more jobs the bucket lets the claim start.
func (h *heldBucket) room() int { return max(0, int(math.Floor(h.tokens))-h.taken) }

// claimBuckets are the rate buckets one claim holds.
type claimBuckets struct {
	now  time.Time // the database time, read with the first lock
	held map[string]*heldBucket
}

// room is the room of the named bucket, and false if the claim holds none
// by that name (no rate).
func (c *claimBuckets) room(name string) (int, bool) {
	h, ok := c.held[name]
	if !ok {
		return 0, false
	}
	return h.room(), true
}

// take debits one token of the named bucket, if the claim holds it.
func (c *claimBuckets) take(name string) {
	if h, ok := c.held[name]; ok {
		h.taken++
	}
}

// lockBuckets locks the buckets of want (name: rate) in one statement,
// creating the missing ones full, and refills them to the database time.
// That is two statements (lock, clock), four the first time a bucket is
// used (create, lock again).
func (b *Base) lockBuckets(ctx context.Context, tx *sql.Tx, c *claimBuckets, want map[string]driver.Rate) error {
	if len(want) == 0 {
		return nil
	}
	if c.held == nil {
		c.held = map[string]*heldBucket{}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	found, err := b.readBuckets(ctx, tx, names)
	if err != nil {
		return err
	}
	if c.now.IsZero() {
		if c.now, err = b.txNow(ctx, tx); err != nil {
			return err
		}
	}
	var missing []string
	for _, n := range names {
		if _, ok := found[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		args := make([]any, 0, 3*len(missing))
		for _, n := range missing {
			args = append(args, n, float64(want[n].Burst), b.Time(c.now))
		}
		if _, err := tx.ExecContext(ctx, b.bindRows(b.Q.BucketInitMany, len(missing)), args...); err != nil {
			return fmt.Errorf("create rate buckets: %w", err)
		}
		// Read them back locked: a claim of another process may have
		// created and spent one meanwhile.
		more, err := b.readBuckets(ctx, tx, missing)
		if err != nil {
			return err
		}
		for n, h := range more {
			found[n] = h
		}
	}
	for _, n := range names {
		h, ok := found[n]
		if !ok {
			return fmt.Errorf("lock rate bucket %s: row missing after creating it", n)
		}
		h.rate = want[n]
		h.tokens, h.at = refill(h.tokens, h.at, c.now, h.rate)
		c.held[n] = h
	}
	return nil
}

// readBuckets locks and reads the named buckets that exist.
func (b *Base) readBuckets(ctx context.Context, tx *sql.Tx, names []string) (map[string]*heldBucket, error) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	out := make(map[string]*heldBucket, len(names))
	err := QueryEach(ctx, tx, "lock rate buckets", b.Bind(b.Q.BucketLockMany, len(names)), args, func(rows *sql.Rows) error {
		var n string
		var h heldBucket
		var at Time
		err := rows.Scan(&n, &h.tokens, &at)
		h.at = at.Time
		out[n] = &h
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// putBuckets writes back, in one statement, the buckets the claim took
// tokens from; the others keep their row, from which the next claim
// refills them the same.
func (b *Base) putBuckets(ctx context.Context, tx *sql.Tx, c *claimBuckets) error {
	var args []any
	for n, h := range c.held {
		if h.taken > 0 {
			args = append(args, n, h.tokens-float64(h.taken), b.Time(h.at))
		}
	}
	if len(args) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, b.bindRows(b.Q.BucketPutMany, len(args)/3), args...); err != nil {
		return fmt.Errorf("take rate tokens: %w", err)
	}
	return nil
}

// bindRows expands /*ROWS*/ in q to n rows of three placeholders and binds
// the query.
func (b *Base) bindRows(q string, n int) string {
	rows := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ")
	return b.Bind(strings.Replace(q, "/*ROWS*/", rows, 1), 0)
}
