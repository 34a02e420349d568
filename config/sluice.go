package config

import (
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
)

// Runtime is what a file sets up in a process that runs jobs: the library's
// Config and the batches whose shards its jobs run. This is the one place
// where the file becomes the library's settings; the CLI only adds what no
// file holds.
type Runtime struct {
	// Config has the types (the file's and one per batch), the queues, the
	// schedules, the retention, the driver and the logger; the caller may
	// set the clock.
	Config sluice.Config
	// Batches are the batches behind the batch types. Once the client
	// exists, give them its metrics, so that their chunks count on its
	// /metrics.
	Batches []*batch.Batch
	// Paused are the queues the file starts paused (paused: true).
	Paused []string
}

// Runtime maps the file for a process that runs jobs on d. open opens a
// copy sink's destination database.
func (f *File) Runtime(d driver.Driver, open func(url string) (driver.Driver, error), log *slog.Logger) (*Runtime, error) {
	types, err := f.SluiceTypes()
	if err != nil {
		return nil, err
	}
	rt := &Runtime{}
	for _, name := range sortedKeys(f.Batches) {
		b, err := f.Batches[name].Runtime(name, open)
		if err != nil {
			return nil, err
		}
		b.Log = log
		typ, t, err := b.JobType(d)
		if err != nil {
			return nil, err
		}
		rt.Batches = append(rt.Batches, b)
		types[typ] = t
	}
	queues := map[string]sluice.QueueConfig{}
	for _, name := range sortedKeys(f.Queues) {
		q := f.Queues[name]
		queues[name] = q.SluiceQueue()
		if q.Paused {
			rt.Paused = append(rt.Paused, name)
		}
	}
	// A queue that only types name still needs workers to run them.
	for _, t := range types {
		if _, ok := queues[t.Queue]; !ok {
			queues[t.Queue] = sluice.QueueConfig{Concurrency: sluice.DefaultConcurrency}
		}
	}
	scheds, err := f.SluiceSchedules()
	if err != nil {
		return nil, err
	}
	rt.Config = sluice.Config{
		Driver:    d,
		Logger:    log,
		Types:     types,
		Queues:    queues,
		Schedules: scheds,
		Retention: f.Retention.Map(),
		// KeepAttempts: 0 is the library's default.
		KeepAttempts: f.History.Keep,
	}
	return rt, nil
}

// SluiceSchedules builds the file's schedules, in name order.
func (f *File) SluiceSchedules() ([]sluice.Schedule, error) {
	out := make([]sluice.Schedule, 0, len(f.Schedules))
	for _, n := range sortedKeys(f.Schedules) {
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

// SluiceTypes builds the job types the file declares, each with its
// webhook or command handler, for sluice.Config.Types.
func (f *File) SluiceTypes() (map[string]sluice.Type, error) {
	types := make(map[string]sluice.Type, len(f.Types))
	for name, t := range f.Types {
		h, err := t.NewHandler()
		if err != nil {
			return nil, fmt.Errorf("type %s: %w", name, err)
		}
		types[name] = sluice.Type{
			Handler:      h,
			Queue:        t.Queue,
			Timeout:      t.Timeout,
			Lease:        t.Lease,
			MaxAttempts:  t.MaxAttempts,
			Backoff:      sluice.Backoff{Base: t.Backoff.Base, Max: t.Backoff.Max},
			Dedupe:       t.Dedupe,
			Circuit:      sluice.Circuit{Threshold: t.Circuit.Threshold, Cooldown: t.Circuit.Cooldown, MaxCooldown: t.Circuit.MaxCooldown},
			MaxRunning:   t.MaxRunning,
			ClusterRate:  t.ClusterRate.PerSecond(),
			ClusterBurst: t.ClusterBurst,
		}
	}
	return types, nil
}

// NewHandler builds the type's webhook or command handler. The type's
// timeout is not passed to a command: sluice applies it to the handler's
// context, which stops the command's process group.
func (t Type) NewHandler() (sluice.Handler, error) {
	if t.HTTP == nil {
		h, err := command.New(command.Config{Argv: t.Command, PermanentExitCodes: t.PermanentExitCodes})
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	timeout := t.HTTP.Timeout
	if timeout == 0 {
		// A webhook request is the whole run, so the type's bound is the
		// request's when the http block sets none.
		timeout = t.Timeout
	}
	h, err := webhook.New(webhook.Config{URL: t.HTTP.URL, Timeout: timeout, Secret: t.HTTP.Secret, Headers: t.HTTP.Headers})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// SluiceQueue is the queue's sluice.QueueConfig.
func (q Queue) SluiceQueue() sluice.QueueConfig {
	qc := sluice.QueueConfig{Concurrency: q.Concurrency, Fair: q.Fair, MaxRunning: q.MaxRunning,
		MaxRunningPerPartition: q.MaxRunningPerPartition, PartitionMaxRunning: q.PartitionMaxRunning,
		Rate: q.Rate.PerSecond(), ClusterRate: q.ClusterRate.PerSecond(), ClusterBurst: q.ClusterBurst,
		ClusterRatePerPartition: q.ClusterRatePerPartition.PerSecond(), ClusterBurstPerPartition: q.ClusterBurstPerPartition}
	for p, r := range q.PartitionClusterRate {
		if qc.PartitionClusterRate == nil {
			qc.PartitionClusterRate = map[string]float64{}
		}
		qc.PartitionClusterRate[p] = r.PerSecond()
	}
	return qc
}
