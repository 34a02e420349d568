package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/cron"
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
	f, err := config.Load(path)
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

// workerClient builds a client that runs the config's queues, types and
// schedules. The database must already be migrated.
func (a *app) workerClient(ctx context.Context, f *config.File) (*sluice.Client, error) {
	d, err := a.open()
	if err != nil {
		return nil, err
	}
	if _, err := driver.CheckSchema(ctx, d); err != nil {
		return nil, err
	}
	types, err := f.SluiceTypes()
	if err != nil {
		return nil, err
	}
	batchTypes, batches, err := a.batchTypes(f)
	if err != nil {
		return nil, err
	}
	for name, t := range batchTypes {
		types[name] = t
	}
	queues := map[string]sluice.QueueConfig{}
	for name, q := range f.Queues {
		queues[name] = q.SluiceQueue()
		if q.Paused {
			// paused: true pauses at start; resuming through the API or
			// CLI then holds until the next start.
			if err := d.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: name, Paused: true}); err != nil {
				return nil, err
			}
		}
	}
	// A queue that only types name still needs workers to run them.
	for _, t := range types {
		if _, ok := queues[t.Queue]; !ok {
			queues[t.Queue] = sluice.QueueConfig{Concurrency: sluice.DefaultConcurrency}
		}
	}
	scheds, err := schedulesOf(f)
	if err != nil {
		return nil, err
	}
	clock, err := clockFromEnv()
	if err != nil {
		return nil, err
	}
	c, err := sluice.NewClient(sluice.Config{
		Clock:     clock,
		Driver:    d,
		Types:     types,
		Queues:    queues,
		Schedules: scheds,
		Retention: f.Retention.Map(),
		Logger:    a.log,
	})
	if err != nil {
		return nil, err
	}
	// Batch shards run as this client's jobs: their chunks count on its /metrics.
	for _, b := range batches {
		b.Metrics = c.Metrics()
	}
	return c, nil
}

// schedulesOf converts the config's schedules, in name order.
func schedulesOf(f *config.File) ([]sluice.Schedule, error) {
	names := make([]string, 0, len(f.Schedules))
	for n := range f.Schedules {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]sluice.Schedule, 0, len(names))
	for _, n := range names {
		s := f.Schedules[n]
		spec, err := cron.Parse(s.Cron, s.Location)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", n, err)
		}
		out = append(out, sluice.Schedule{Name: n, Spec: spec, Type: s.Type, Payload: s.Payload,
			Queue: s.Queue, Overlap: s.Overlap, CatchUp: s.CatchUp})
	}
	return out, nil
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
