package driver

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// Limits is the storage of the cluster-wide circuit breakers and rate
// limits. Every transition is decided on the database clock inside one
// transaction that locks the row, so that any number of nodes agree.
type Limits interface {
	// Circuit reads a type's breaker; a type with no row is closed.
	Circuit(ctx context.Context, p CircuitParams) (sluicetype.Circuit, error)
	// ListCircuits reads every breaker row, ordered by type.
	ListCircuits(ctx context.Context) ([]sluicetype.Circuit, error)
	// RecordCircuit applies one attempt's outcome to a type's breaker, as
	// CircuitPolicy.Next decides, and returns the new state.
	RecordCircuit(ctx context.Context, p RecordCircuitParams) (sluicetype.Circuit, error)
	// ProbeCircuit makes p.Token the one probe of an open circuit whose
	// cool-down is over (or of a half-open one whose probe deadline
	// passed), and reports whether it did. At most one caller wins.
	ProbeCircuit(ctx context.Context, p ProbeCircuitParams) (bool, error)
	// SetCircuit opens a type's breaker by hand, until a hand closes it, or
	// closes it and clears its counts.
	SetCircuit(ctx context.Context, p SetCircuitParams) (sluicetype.Circuit, error)

	// TakeTokens refills the named bucket by the time passed on the
	// database clock, takes up to p.Want whole tokens and returns how many
	// it took. A missing bucket starts full.
	TakeTokens(ctx context.Context, p TakeTokensParams) (int, error)
	// ReturnTokens puts back tokens taken but not used, up to the burst.
	ReturnTokens(ctx context.Context, p ReturnTokensParams) error
	// ListRateBuckets reads every bucket as last written, ordered by name.
	ListRateBuckets(ctx context.Context) ([]sluicetype.RateBucket, error)
}

// CircuitPolicy configures one type's breaker.
type CircuitPolicy struct {
	// Threshold is K: this many consecutive transient failures open the
	// circuit. Zero: no breaker.
	Threshold int
	// Cooldown is the first open period; each reopening after a failed
	// probe doubles it, up to MaxCooldown.
	Cooldown, MaxCooldown time.Duration
}

// CooldownAfter is the open period after the n-th consecutive opening.
func (p CircuitPolicy) CooldownAfter(n int) time.Duration {
	d := p.Cooldown
	for i := 1; i < n && d < p.MaxCooldown; i++ {
		d *= 2
	}
	return min(d, max(p.MaxCooldown, p.Cooldown))
}

// Next is the one rule of a breaker's transitions: c after an attempt
// that failed transiently (failed) or not, which ran as the probe under
// token probe (empty: a plain attempt), at database time now. Outcomes of
// attempts that started before the circuit opened change nothing while it
// is open or half-open: only the probe decides.
func (p CircuitPolicy) Next(c sluicetype.Circuit, failed bool, probe string, now time.Time) sluicetype.Circuit {
	isProbe := c.State == sluicetype.CircuitHalfOpen && probe != "" && probe == c.Probe
	switch {
	case isProbe && failed:
		c.State, c.Opens, c.Probe = sluicetype.CircuitOpen, c.Opens+1, ""
		c.Until = now.Add(p.CooldownAfter(c.Opens))
	case isProbe:
		c = sluicetype.Circuit{Type: c.Type, State: sluicetype.CircuitClosed, Until: c.Until}
	case c.State != sluicetype.CircuitClosed:
	case failed:
		c.Failures++
		if p.Threshold > 0 && c.Failures >= p.Threshold {
			c.State, c.Opens = sluicetype.CircuitOpen, 1
			c.Until = now.Add(p.CooldownAfter(1))
		}
	default:
		c.Failures = 0
	}
	c.UpdatedAt = now
	return c
}

// CircuitParams names a type's breaker.
type CircuitParams struct {
	Type string
}

// RecordCircuitParams is one attempt's outcome for a type's breaker.
type RecordCircuitParams struct {
	Type string
	// Failed: the attempt failed transiently. A success or a permanent
	// failure (the service answered) resets the count.
	Failed bool
	// Probe is the attempt's lease token if it ran as the probe.
	Probe  string
	Policy CircuitPolicy
}

// ProbeCircuitParams names the would-be probe and how long it may take
// before another node may probe instead.
type ProbeCircuitParams struct {
	Type  string
	Token string
	TTL   time.Duration
}

// SetCircuitParams opens (Open) or closes a breaker by hand.
type SetCircuitParams struct {
	Type string
	Open bool
}

// TakeTokensParams takes up to Want tokens from the bucket Name, which
// refills at Rate tokens per second up to Burst.
type TakeTokensParams struct {
	Name  string
	Rate  float64
	Burst int
	Want  int
}

// ReturnTokensParams puts N unused tokens back into the bucket Name; Rate
// and Burst are the bucket's, as given to TakeTokens.
type ReturnTokensParams struct {
	Name  string
	N     int
	Rate  float64
	Burst int
}
