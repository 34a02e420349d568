package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The circuit breakers and rate buckets (driver.Limits) are decided here
// from rows that CircuitLock and BucketLock lock until the transaction
// ends (SQLite's write transactions are exclusive already).

func scanCircuit(row interface{ Scan(...any) error }) (sluicetype.Circuit, error) {
	var c sluicetype.Circuit
	var until, updated Time
	err := row.Scan(&c.Type, &c.State, &c.Failures, &c.Opens, &c.Manual, &until, &c.Probe, &updated)
	c.Until, c.UpdatedAt = until.Time, updated.Time
	return c, err
}

// Circuit reads a type's breaker; a type without a row is closed.
func (b *Base) Circuit(ctx context.Context, p driver.CircuitParams) (sluicetype.Circuit, error) {
	c, err := scanCircuit(b.Read.QueryRowContext(ctx, b.Q.CircuitGet, p.Type))
	if errors.Is(err, sql.ErrNoRows) {
		return sluicetype.Circuit{Type: p.Type, State: sluicetype.CircuitClosed}, nil
	}
	if err != nil {
		return sluicetype.Circuit{}, fmt.Errorf("read circuit of type %s: %w", p.Type, err)
	}
	return c, nil
}

// ListCircuits reads every breaker row.
func (b *Base) ListCircuits(ctx context.Context) ([]sluicetype.Circuit, error) {
	return QueryAll(ctx, b.Read, "list circuits", b.Q.CircuitList, nil, func(rows *sql.Rows) (sluicetype.Circuit, error) {
		return scanCircuit(rows)
	})
}

// changeCircuit runs change on a type's breaker row, locked and created
// closed if missing, with the database time, and writes back what it
// returns when write is true.
func (b *Base) changeCircuit(ctx context.Context, typ string, change func(c sluicetype.Circuit, now time.Time) (sluicetype.Circuit, bool)) (sluicetype.Circuit, error) {
	var out sluicetype.Circuit
	err := b.InTx(ctx, nil, func(tx *sql.Tx) error {
		now, err := b.txNow(ctx, tx)
		if err != nil {
			return err
		}
		c, err := scanCircuit(tx.QueryRowContext(ctx, b.Q.CircuitLock, typ))
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := tx.ExecContext(ctx, b.Q.CircuitInit, typ, b.Time(now), b.Time(now)); err != nil {
				return err
			}
			c, err = scanCircuit(tx.QueryRowContext(ctx, b.Q.CircuitLock, typ))
		}
		if err != nil {
			return err
		}
		next, write := change(c, now)
		if write {
			if _, err := tx.ExecContext(ctx, b.Q.CircuitPut, next.State, next.Failures, next.Opens, next.Manual,
				b.Time(next.Until), next.Probe, b.Time(now), typ); err != nil {
				return err
			}
			next.UpdatedAt = now
		}
		out = next
		return nil
	})
	if err != nil {
		return sluicetype.Circuit{}, fmt.Errorf("circuit of type %s: %w", typ, err)
	}
	return out, nil
}

// txNow reads the database clock inside tx, so that a transition and the
// time it is decided at come from the same snapshot of the world.
func (b *Base) txNow(ctx context.Context, tx *sql.Tx) (time.Time, error) {
	var t Time
	if err := tx.QueryRowContext(ctx, b.Q.Now).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t.Time, nil
}

// RecordCircuit applies one attempt's outcome as p.Policy.Next decides.
func (b *Base) RecordCircuit(ctx context.Context, p driver.RecordCircuitParams) (sluicetype.Circuit, error) {
	return b.changeCircuit(ctx, p.Type, func(c sluicetype.Circuit, now time.Time) (sluicetype.Circuit, bool) {
		next := p.Policy.Next(c, p.Failed, p.Probe, now)
		if next.State == c.State && next.Failures == c.Failures && next.Opens == c.Opens && next.Probe == c.Probe {
			return c, false // nothing to write: a closed circuit's successes cost one locked read
		}
		return next, true
	})
}

// ProbeCircuit hands the probe to p.Token if the cool-down (or the last
// probe's deadline) is over.
func (b *Base) ProbeCircuit(ctx context.Context, p driver.ProbeCircuitParams) (bool, error) {
	won := false
	_, err := b.changeCircuit(ctx, p.Type, func(c sluicetype.Circuit, now time.Time) (sluicetype.Circuit, bool) {
		if c.State == sluicetype.CircuitClosed || c.Manual || now.Before(c.Until) {
			return c, false
		}
		c.State, c.Probe, c.Until = sluicetype.CircuitHalfOpen, p.Token, now.Add(p.TTL)
		won = true
		return c, true
	})
	return won, err
}

// SetCircuit opens a breaker by hand, or closes it.
func (b *Base) SetCircuit(ctx context.Context, p driver.SetCircuitParams) (sluicetype.Circuit, error) {
	return b.changeCircuit(ctx, p.Type, func(c sluicetype.Circuit, now time.Time) (sluicetype.Circuit, bool) {
		if p.Open {
			return sluicetype.Circuit{Type: c.Type, State: sluicetype.CircuitOpen, Opens: max(c.Opens, 1), Manual: true, Until: now}, true
		}
		return sluicetype.Circuit{Type: c.Type, State: sluicetype.CircuitClosed, Until: now}, true
	})
}

// changeBucket refills the named bucket to the database time, locked and
// created full if missing, and lets change adjust its tokens.
func (b *Base) changeBucket(ctx context.Context, name string, rate float64, burst int, change func(tokens float64) float64) error {
	err := b.InTx(ctx, nil, func(tx *sql.Tx) error {
		now, err := b.txNow(ctx, tx)
		if err != nil {
			return err
		}
		var tokens float64
		var at Time
		err = tx.QueryRowContext(ctx, b.Q.BucketLock, name).Scan(&tokens, &at)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := tx.ExecContext(ctx, b.Q.BucketInit, name, float64(burst), b.Time(now)); err != nil {
				return err
			}
			err = tx.QueryRowContext(ctx, b.Q.BucketLock, name).Scan(&tokens, &at)
		}
		if err != nil {
			return err
		}
		tokens, now = refill(tokens, at.Time, now, driver.Rate{PerSecond: rate, Burst: burst})
		tokens = change(tokens)
		_, err = tx.ExecContext(ctx, b.Q.BucketPut, tokens, b.Time(now), name)
		return err
	})
	if err != nil {
		return fmt.Errorf("rate bucket %s: %w", name, err)
	}
	return nil
}

// TakeTokens takes up to p.Want whole tokens.
func (b *Base) TakeTokens(ctx context.Context, p driver.TakeTokensParams) (int, error) {
	took := 0
	err := b.changeBucket(ctx, p.Name, p.Rate, p.Burst, func(tokens float64) float64 {
		took = min(p.Want, int(math.Floor(tokens)))
		took = max(took, 0)
		return tokens - float64(took)
	})
	if err != nil {
		return 0, err
	}
	return took, nil
}

// ReturnTokens puts back tokens taken but not used.
func (b *Base) ReturnTokens(ctx context.Context, p driver.ReturnTokensParams) error {
	return b.changeBucket(ctx, p.Name, p.Rate, p.Burst, func(tokens float64) float64 {
		return min(tokens+float64(p.N), float64(p.Burst))
	})
}

// ListRateBuckets reads every bucket as last written.
func (b *Base) ListRateBuckets(ctx context.Context) ([]sluicetype.RateBucket, error) {
	return QueryAll(ctx, b.Read, "list rate buckets", b.Q.BucketList, nil, func(rows *sql.Rows) (sluicetype.RateBucket, error) {
		var r sluicetype.RateBucket
		var at Time
		err := rows.Scan(&r.Name, &r.Tokens, &at)
		r.UpdatedAt = at.Time
		return r, err
	})
}
