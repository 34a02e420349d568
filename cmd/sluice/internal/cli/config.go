package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/driver"
)

// loadConfig reads --config, $SLUICE_CONFIG or ./sluice.yaml, once; with
// none of them it returns an empty config. resolve calls it before every
// command that uses the database, so later calls return what it read.
func (a *app) loadConfig() (*config.File, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	path := a.configFlag
	if path == "" {
		path = os.Getenv("SLUICE_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("sluice.yaml"); err == nil {
			path = "sluice.yaml"
		}
	}
	if path == "" {
		a.cfg = &config.File{}
		return a.cfg, nil
	}
	f, err := setup.Load(path)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			return nil, usagef("%v", err)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	a.cfg, a.cfgPath = f, path
	return f, nil
}

// workerClient builds a client that runs the config's queues, types,
// batches and schedules. The database must already be migrated.
func (a *app) workerClient(ctx context.Context) (*sluice.Client, error) {
	// The handlers' secrets are needed here, and only here and in serve.
	if err := a.cfg.Unresolved("types"); err != nil {
		return nil, usagef("%v", err)
	}
	d, err := a.migrated(ctx)
	if err != nil {
		return nil, err
	}
	rt, err := setup.NewRuntime(a.cfg, d, a.openDest, a.log)
	if err != nil {
		return nil, err
	}
	if len(rt.Config.Types) == 0 {
		// Not an error: a process may run only maintenance. But its jobs
		// would wait for ever without a word.
		a.log.Warn("the config declares no job types: this process has no handler and runs no jobs", "config", a.cfgPath)
	}
	for _, q := range rt.Paused {
		// paused: true pauses at start; resuming through the API or CLI
		// then holds until the next start.
		if err := d.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: q, Paused: true}); err != nil {
			return nil, err
		}
	}
	if rt.Config.Clock, err = clockFromEnv(); err != nil {
		return nil, err
	}
	if rt.Config.TracerProvider, err = a.tracerProvider(a.cfg.Tracing); err != nil {
		return nil, err
	}
	c, err := sluice.NewClient(rt.Config)
	if err != nil {
		return nil, err
	}
	for _, b := range rt.Batches {
		b.Metrics = c.Metrics()
	}
	return c, nil
}

// clockFromEnv reads SLUICE_CLOCK_OFFSET, a test hook that skews this
// process's wall clock (never the database's) to show that no job decision
// depends on it. It is not meant for production, so it has no flag.
func clockFromEnv() (func() time.Time, error) {
	v := os.Getenv("SLUICE_CLOCK_OFFSET")
	if v == "" {
		return time.Now, nil
	}
	off, err := time.ParseDuration(v)
	if err != nil {
		return nil, usagef("SLUICE_CLOCK_OFFSET %q: %v", v, err)
	}
	return func() time.Time { return time.Now().Add(off) }, nil
}
