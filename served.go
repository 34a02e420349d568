package sluice

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// HandlerWindow is how recently a process with a handler for a job type
// must have run (a worker, or a pass of RunOnce) for the type's pending
// jobs not to count as waiting for a handler. Workers stamp their types
// every ServeEvery; an hour also covers passes a cron starts every few
// minutes, at the price of an hour before a type whose handler a deploy
// removed shows. A type no process has ever served shows at once.
const HandlerWindow = time.Hour

// ServeEvery is how often a running worker process stamps the types it
// serves.
const ServeEvery = time.Minute

// handledTypes are the job types this client has a handler for, in name
// order: the types its workers and passes claim, and stamp as served.
func (c *Client) handledTypes() []string {
	var names []string
	for name, t := range c.cfg.Types {
		if t.Handler != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// serveTypes stamps the client's handled types as served now.
func (c *Client) serveTypes(ctx context.Context) error {
	if err := c.drv.ServeTypes(ctx, driver.ServeTypesParams{Types: c.handledTypes()}); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	return nil
}

// WaitingForHandler counts, per job type in name order, the pending jobs
// of the types that no process with a handler for them has served within
// HandlerWindow: a type missing from every worker's config, or a typo at
// enqueue. `sluice stats`, GET /v1/stats, the dashboard and the metric
// sluice_jobs_waiting_for_handler show these counts.
func (c *Client) WaitingForHandler(ctx context.Context) ([]sluicetype.TypeCount, error) {
	waiting, err := c.drv.UnservedTypes(ctx, driver.UnservedTypesParams{Within: HandlerWindow})
	if err != nil {
		return nil, fmt.Errorf("sluice: %w", err)
	}
	return waiting, nil
}
