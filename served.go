package sluice

import (
	"context"
	"fmt"
	"slices"
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

// serve stamps queues as served now, and the handled types configured
// for one of them: only what this process claims. A type whose queue it
// does not run is left to the process that runs it, so that its jobs
// still show as waiting for a handler when none does.
func (c *Client) serve(ctx context.Context, queues []string) error {
	var types []string
	for _, name := range c.handledTypes() {
		if slices.Contains(queues, c.cfg.Types[name].Queue) {
			types = append(types, name)
		}
	}
	if err := c.drv.ServeTypes(ctx, driver.ServeTypesParams{Types: types}); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	if err := c.drv.ServeQueues(ctx, driver.ServeQueuesParams{Queues: queues}); err != nil {
		return fmt.Errorf("sluice: %w", err)
	}
	return nil
}

// serveWorkers stamps the queues this client's workers claim from.
func (c *Client) serveWorkers(ctx context.Context) error {
	names := make([]string, 0, len(c.cfg.Queues))
	for n := range c.cfg.Queues {
		names = append(names, n)
	}
	sort.Strings(names)
	return c.serve(ctx, names)
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

// UnservedQueues counts, per queue in name order, the pending jobs of the
// queues that no process has claimed from (a worker, or a pass of
// RunOnce) within HandlerWindow: a queue no config lists, such as one a
// framework's ->onQueue('emails') names. Each process stamps the queues
// it claims from, so a queue served only by another process, whose
// config this one cannot see, does not count. `sluice stats`,
// GET /v1/stats, the dashboard and the metric sluice_jobs_in_unserved_queue
// show these counts.
func (c *Client) UnservedQueues(ctx context.Context) ([]sluicetype.QueueCount, error) {
	waiting, err := c.drv.UnservedQueues(ctx, driver.UnservedQueuesParams{Within: HandlerWindow})
	if err != nil {
		return nil, fmt.Errorf("sluice: %w", err)
	}
	return waiting, nil
}
