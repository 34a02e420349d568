package sluice

import (
	"context"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Circuits reads every job type's circuit breaker, ordered by type.
// Types whose breaker never counted a failure have none.
func (c *Client) Circuits(ctx context.Context) ([]sluicetype.Circuit, error) {
	return orEmpty(c.drv.ListCircuits(ctx))
}

// OpenCircuit opens a job type's circuit by hand, on every node: no job of
// the type starts (its jobs stay pending, uncharged) until CloseCircuit.
// Workers consult the breaker only of types configured with one
// (Circuit.Threshold > 0), so a type this client knows without one is
// refused; a type it does not know is opened for the workers that do.
func (c *Client) OpenCircuit(ctx context.Context, jobType string) (sluicetype.Circuit, error) {
	return c.setCircuit(ctx, jobType, true)
}

// CloseCircuit closes a job type's circuit and clears its failure count,
// whether it was opened by hand or by failures.
func (c *Client) CloseCircuit(ctx context.Context, jobType string) (sluicetype.Circuit, error) {
	return c.setCircuit(ctx, jobType, false)
}

func (c *Client) setCircuit(ctx context.Context, jobType string, open bool) (sluicetype.Circuit, error) {
	if err := checkName("type", jobType, sluicetype.MaxTypeLen); err != nil {
		return sluicetype.Circuit{}, err
	}
	if t, known := c.cfg.Types[jobType]; known && t.Circuit.Threshold == 0 && open {
		return sluicetype.Circuit{}, inputErr("type", "%s has no circuit breaker (circuit threshold 0), so its workers never check one", jobType)
	}
	r, err := c.drv.SetCircuit(ctx, driver.SetCircuitParams{Type: jobType, Open: open})
	if err != nil {
		return sluicetype.Circuit{}, err
	}
	c.log.Info("circuit set by hand", "type", jobType, "state", r.State)
	action := "circuit.close"
	if open {
		action = "circuit.open"
	}
	c.audit(ctx, action, "type "+jobType, 1)
	return r, nil
}
