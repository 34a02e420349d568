package sluice

import (
	"context"
	"fmt"
	"sort"

	"github.com/sluicehq/sluice/driver"
)

// SyncTypes writes the queue, max_attempts and dedupe of every type the
// client knows to the database's sluice_types, from which an INSERT of
// plain SQL that leaves those columns out takes them (docs/reference.md
// "Job table"), and returns how many types' rows it changed. Start and
// RunOnce call it once per client, so every process that runs jobs keeps
// the table as its config says; `sluice migrate` calls it with the config
// file's types. Types the client does not know keep their rows: another
// process's config may define them.
func (c *Client) SyncTypes(ctx context.Context) (int, error) {
	if len(c.cfg.Types) == 0 {
		return 0, nil
	}
	names := make([]string, 0, len(c.cfg.Types))
	for name := range c.cfg.Types {
		names = append(names, name)
	}
	sort.Strings(names)
	settings := make([]driver.TypeSettings, len(names))
	for i, name := range names {
		t := c.cfg.Types[name]
		settings[i] = driver.TypeSettings{Type: name, Queue: t.Queue, MaxAttempts: t.MaxAttempts, Dedupe: t.Dedupe}
	}
	n, err := c.drv.SyncTypes(ctx, driver.SyncTypesParams{Types: settings})
	if err != nil {
		return n, fmt.Errorf("sluice: %w", err)
	}
	if n > 0 {
		c.log.Info("type settings written for plain-SQL enqueues", "types", n)
	}
	return n, nil
}

// syncTypesOnce is SyncTypes the first time it succeeds on this client.
func (c *Client) syncTypesOnce(ctx context.Context) error {
	c.typesMu.Lock()
	defer c.typesMu.Unlock()
	if c.typesSynced {
		return nil
	}
	if _, err := c.SyncTypes(ctx); err != nil {
		return err
	}
	c.typesSynced = true
	return nil
}
