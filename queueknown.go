package sluice

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/sluicetype"
)

// checkQueueKnown refuses a queue that nothing knows, so that a typo in a
// cron pass's ?queue= or in `sluice queues pause` is an error rather than
// a pass that finds nothing or a flag that pauses nothing. A queue is
// known when the client's config names it (DefaultQueue, Config.Queues,
// or a type's queue or a schedule's), or when the database holds it: a
// pause flag (set or cleared) or a pending or running job, as a queue
// used only by plain-SQL or API enqueues does.
func (c *Client) checkQueueKnown(ctx context.Context, queue string) error {
	known := c.configQueues()
	if known[queue] {
		return nil
	}
	flags, err := c.drv.PausedQueues(ctx)
	if err != nil {
		return fmt.Errorf("checking queue %q: %w", queue, err)
	}
	if _, ok := flags[queue]; ok {
		return nil
	}
	for _, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing} {
		jobs, err := c.drv.ListJobs(ctx, sluicetype.ListParams{Queue: queue, Status: st, Limit: 1})
		if err != nil {
			return fmt.Errorf("checking queue %q: %w", queue, err)
		}
		if len(jobs) > 0 {
			return nil
		}
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	return inputErr("queue", "unknown queue %q: not in the config (known: %s) and no pending or running job or pause flag in the database",
		queue, strings.Join(names, ", "))
}

// configQueues are the queues the client's config names.
func (c *Client) configQueues() map[string]bool {
	known := map[string]bool{DefaultQueue: true}
	for n := range c.cfg.Queues {
		known[n] = true
	}
	for _, t := range c.cfg.Types {
		if t.Queue != "" {
			known[t.Queue] = true
		}
	}
	for _, s := range c.cfg.Schedules {
		if s.Queue != "" {
			known[s.Queue] = true
		}
	}
	return known
}
