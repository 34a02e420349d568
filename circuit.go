package sluice

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// CircuitState is a job type's circuit breaker as stored, shared by every
// node. Types whose breaker never counted a failure have none.
type CircuitState struct {
	Type string `json:"type"`
	// State is sluicetype.CircuitClosed, CircuitOpen or CircuitHalfOpen.
	State string `json:"state"`
	// Failures counts consecutive transient failures while closed.
	Failures int `json:"failures"`
	// Opens counts openings since the circuit last closed.
	Opens int `json:"opens"`
	// Manual: opened by hand; it stays open until closed by hand.
	Manual bool `json:"manual"`
	// Until is the end of the cool-down (open) or the probe's deadline
	// (half-open); nil when closed.
	Until *time.Time `json:"until,omitempty"`
}

func circuitState(c sluicetype.Circuit) CircuitState {
	s := CircuitState{Type: c.Type, State: c.State, Failures: c.Failures, Opens: c.Opens, Manual: c.Manual}
	if c.State != sluicetype.CircuitClosed && !c.Manual {
		u := c.Until
		s.Until = &u
	}
	return s
}

// Circuits reads every job type's circuit breaker.
func (c *Client) Circuits(ctx context.Context) ([]CircuitState, error) {
	rows, err := c.drv.ListCircuits(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CircuitState, len(rows))
	for i, r := range rows {
		out[i] = circuitState(r)
	}
	return out, nil
}

// OpenCircuit opens a job type's circuit by hand, on every node: no job of
// the type starts (its jobs stay pending, uncharged) until CloseCircuit.
// Workers consult the breaker only of types configured with one
// (Circuit.Threshold > 0), so a type this client knows without one is
// refused; a type it does not know is opened for the workers that do.
func (c *Client) OpenCircuit(ctx context.Context, jobType string) (CircuitState, error) {
	return c.setCircuit(ctx, jobType, true)
}

// CloseCircuit closes a job type's circuit and clears its failure count,
// whether it was opened by hand or by failures.
func (c *Client) CloseCircuit(ctx context.Context, jobType string) (CircuitState, error) {
	return c.setCircuit(ctx, jobType, false)
}

func (c *Client) setCircuit(ctx context.Context, jobType string, open bool) (CircuitState, error) {
	if err := checkName("type", jobType, sluicetype.MaxTypeLen); err != nil {
		return CircuitState{}, err
	}
	if t, known := c.cfg.Types[jobType]; known && t.Circuit.Threshold == 0 && open {
		return CircuitState{}, inputErr("type", "%s has no circuit breaker (circuit threshold 0), so its workers never check one", jobType)
	}
	r, err := c.drv.SetCircuit(ctx, driver.SetCircuitParams{Type: jobType, Open: open})
	if err != nil {
		return CircuitState{}, err
	}
	c.log.Info("circuit set by hand", "type", jobType, "state", r.State)
	return circuitState(r), nil
}
