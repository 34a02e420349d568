package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// admission is what a job's circuit breaker decided before it starts.
type admission struct {
	run bool
	// probe is the attempt's probe token when it runs as the half-open
	// probe; its outcome alone closes or reopens the circuit.
	probe string
	// dirty: the circuit had failures counted, so a success must reset them.
	dirty bool
	// wait is how long a job that may not run goes back to pending for.
	wait time.Duration
}

// minHandBack keeps a job handed back by an open circuit from being claimed
// again at once when its cool-down is nearly over.
const minHandBack = 50 * time.Millisecond

// recheckOpen bounds how long a job waits after a circuit opened by hand
// or a probe's success closed it: its jobs are handed back for at most
// this long, at the cost of one claim and hand-back each time.
const recheckOpen = 5 * time.Second

// admit asks a type's breaker whether j may start, on the database: each
// start of a job whose type has a breaker reads its row, so that a circuit
// opened by any node stops every node's next start. A database error lets
// the job run: its outcome cannot be written either until the database
// answers, and the breaker guards the job's service, not the database.
func (p *Pool) admit(ctx context.Context, j sluicetype.JobRow, pol driver.CircuitPolicy) admission {
	c, err := p.cfg.Driver.Circuit(ctx, driver.CircuitParams{Type: j.Type})
	if err != nil {
		p.log.Warn("reading the circuit breaker failed; running the job", "type", j.Type, "job_id", j.ID, "err", err)
		return admission{run: true}
	}
	if c.State == sluicetype.CircuitClosed {
		return admission{run: true, dirty: c.Failures > 0}
	}
	token := fmt.Sprintf("%s/%d", j.LockedBy, j.ID)
	won, err := p.cfg.Driver.ProbeCircuit(ctx, driver.ProbeCircuitParams{Type: j.Type, Token: token, TTL: p.cfg.LeaseFor(j.Type)})
	if err != nil {
		p.log.Warn("taking the circuit's probe failed; handing the job back", "type", j.Type, "job_id", j.ID, "err", err)
		return admission{wait: min(pol.Cooldown, recheckOpen)}
	}
	if won {
		p.log.Info("circuit half-open: running one probe job", "type", j.Type, "job_id", j.ID)
		return admission{run: true, probe: token}
	}
	// A circuit open by hand, or waiting on a probe, may close at any
	// moment: its jobs come back every recheckOpen at most.
	wait := min(pol.Cooldown, recheckOpen)
	if c.State == sluicetype.CircuitOpen && !c.Manual {
		if now, err := p.cfg.Driver.Now(ctx); err == nil && c.Until.After(now) {
			wait = max(c.Until.Sub(now), minHandBack)
		}
	}
	return admission{wait: wait}
}

// recordCircuit writes an attempt's outcome to its type's breaker. Only
// what can change the circuit is written: a transient failure, the probe's
// outcome, or a success that ends a run of counted failures.
func (p *Pool) recordCircuit(j sluicetype.JobRow, pol driver.CircuitPolicy, g admission, o Result) {
	if o.Refund {
		// Snoozed or stopped by shutdown: the service gave no answer. A
		// probe's deadline (the type's lease) lets another node probe.
		return
	}
	if !o.Transient && g.probe == "" && !g.dirty {
		return
	}
	ctx, cancel := p.reach.bound(context.Background(), callTimeout(p.cfg.LeaseFor(j.Type)))
	defer cancel()
	c, err := p.cfg.Driver.RecordCircuit(ctx, driver.RecordCircuitParams{Type: j.Type, Failed: o.Transient, Probe: g.probe, Policy: pol})
	if err != nil {
		p.log.Error("recording the outcome in the circuit breaker failed", "type", j.Type, "job_id", j.ID, "err", err)
		return
	}
	switch {
	case c.State == sluicetype.CircuitOpen && g.probe != "":
		p.log.Warn("circuit reopened: the probe failed", "type", j.Type, "until", c.Until, "opens", c.Opens)
	case c.State == sluicetype.CircuitOpen && c.Opens == 1 && o.Transient:
		// Every attempt in flight when the circuit opened may say so.
		p.log.Warn("circuit open after consecutive transient failures", "type", j.Type, "failures", c.Failures, "until", c.Until)
	case c.State == sluicetype.CircuitClosed && g.probe != "":
		p.log.Info("circuit closed: the probe succeeded", "type", j.Type)
	}
}
