package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
)

// pausedCache mirrors the queues' paused flags, so that a pause made
// through the API or CLI reaches running workers without a restart.
type pausedCache struct {
	d        driver.Driver
	log      *slog.Logger
	interval time.Duration
	mu       sync.RWMutex
	paused   map[string]bool
}

func (c *pausedCache) is(queue string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.paused[queue]
}

func (c *pausedCache) refresh(ctx context.Context) {
	m, err := c.d.PausedQueues(ctx)
	if err != nil {
		c.log.Warn("reading paused queues failed", "err", err)
		return
	}
	c.mu.Lock()
	old := c.paused
	c.paused = m
	c.mu.Unlock()
	// Said once per change, so that an operator (and a test) sees when a
	// pause made elsewhere reached this process.
	for q, p := range m {
		if p && !old[q] {
			c.log.Info("queue paused: no new claims", "queue", q)
		}
	}
	for q, p := range old {
		if p && !m[q] {
			c.log.Info("queue resumed", "queue", q)
		}
	}
}

func (c *pausedCache) loop(ctx context.Context) { service.Every(ctx, c.interval, c.refresh) }
