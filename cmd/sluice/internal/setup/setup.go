// Package setup builds what a config file describes: the library's
// Config, with a webhook or command handler per job type, the batches and
// their job types, the queues and the schedules. Package config reads and
// checks the file alone; this package holds the one mapping from the
// file's settings to the library's and checks the file against the rules
// of the packages it describes (Check), reporting each problem at the
// file's key as package config does. What the file leaves out stays zero,
// and the library fills in its defaults (sluice.Type.WithDefaults).
package setup

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/sluicetype"
)

// Load reads the config file at path and checks it, by package config's
// rules and then by Check's. Problems in the file are *config.Error values
// that name path.
func Load(path string) (*config.File, error) {
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return checked(f)
}

// Parse is Load of a file's content; name appears in errors as the file's
// name.
func Parse(name string, data []byte) (*config.File, error) {
	f, err := config.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return checked(f)
}

func checked(f *config.File) (*config.File, error) {
	if err := Check(f); err != nil {
		return nil, err
	}
	return f, nil
}

// Runtime is what a file sets up in a process that runs jobs: the library's
// Config and the batches whose shards its jobs run. The CLI only adds what
// no file holds.
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

// NewRuntime maps the file for a process that runs jobs on d. open opens a
// copy sink's destination database.
func NewRuntime(f *config.File, d driver.Driver, open func(url string) (driver.Driver, error), log *slog.Logger) (*Runtime, error) {
	types, err := Types(f)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{}
	for _, name := range sortedKeys(f.Batches) {
		b, err := Batch(name, f.Batches[name], open)
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
	queues := Queues(f)
	for _, name := range sortedKeys(f.Queues) {
		if f.Queues[name].Paused {
			rt.Paused = append(rt.Paused, name)
		}
	}
	// A queue that only types name still needs workers to run them.
	for _, t := range types {
		q := t.WithDefaults().Queue
		if _, ok := queues[q]; !ok {
			queues[q] = sluice.QueueConfig{}
		}
	}
	scheds, err := Schedules(f)
	if err != nil {
		return nil, err
	}
	rt.Config = sluice.Config{
		Driver:         d,
		Logger:         log,
		Types:          types,
		Queues:         queues,
		Schedules:      scheds,
		Retention:      Retention(f.Retention),
		AuditRetention: f.Retention.Audit,
		KeepAttempts:   f.History.Keep,
	}
	return rt, nil
}

// Retention is the file's retention keyed by job status, as
// sluice.Config.Retention takes it; a status the file leaves out is absent,
// and keeps the library's default.
func Retention(r config.Retention) map[sluicetype.Status]time.Duration {
	out := map[sluicetype.Status]time.Duration{}
	for st, d := range map[sluicetype.Status]time.Duration{
		sluicetype.StatusSuccess: r.Success, sluicetype.StatusFailed: r.Failed, sluicetype.StatusCancelled: r.Cancelled,
	} {
		if d != 0 {
			out[st] = d
		}
	}
	return out
}

// Schedules builds the file's schedules, in name order.
func Schedules(f *config.File) ([]sluice.Schedule, error) {
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

// Types builds the job types the file declares, each with its webhook or
// command handler, for sluice.Config.Types.
func Types(f *config.File) (map[string]sluice.Type, error) {
	types := make(map[string]sluice.Type, len(f.Types))
	for name, t := range f.Types {
		h, err := Handler(t)
		if err != nil {
			return nil, fmt.Errorf("type %s: %w", name, err)
		}
		st := Type(t)
		st.Handler = h
		types[name] = st
	}
	return types, nil
}

// Type is the settings of the file's type t as the library takes them,
// without the handler: what the file leaves out stays zero, the library's
// default.
func Type(t config.Type) sluice.Type {
	return sluice.Type{
		Queue:    t.Queue,
		Timeout:  t.Timeout,
		Lease:    t.Lease,
		Deadline: t.Deadline,
		// The policy as written; the file's check refused any other.
		ProgressTimeout: t.ProgressTimeout,
		OnStuck:         sluicetype.OnStuck(t.OnStuck),
		MaxAttempts:     t.MaxAttempts,
		Backoff:         sluice.Backoff{Base: t.Backoff.Base, Max: t.Backoff.Max},
		Dedupe:          t.Dedupe,
		Circuit:         sluice.Circuit{Threshold: t.Circuit.Threshold, Cooldown: t.Circuit.Cooldown, MaxCooldown: t.Circuit.MaxCooldown},
		MaxRunning:      t.MaxRunning,
		ClusterRate:     t.ClusterRate.PerSecond(),
		ClusterBurst:    t.ClusterBurst,
	}
}

// Handler builds the type's webhook or command handler. The type's
// timeout is not passed to a command: sluice applies it to the handler's
// context, which stops the command's process group.
func Handler(t config.Type) (sluice.Handler, error) {
	if t.HTTP == nil {
		var env []string
		for k, v := range t.Env {
			env = append(env, k+"="+v)
		}
		slices.Sort(env)
		h, err := command.New(command.Config{Argv: t.Command, PermanentExitCodes: t.PermanentExitCodes, Env: env, KillGrace: t.KillGrace})
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

// Queues is the file's queues as sluice.Config.Queues takes them.
func Queues(f *config.File) map[string]sluice.QueueConfig {
	out := make(map[string]sluice.QueueConfig, len(f.Queues))
	for name, q := range f.Queues {
		out[name] = Queue(q)
	}
	return out
}

// Queue is the queue's sluice.QueueConfig.
func Queue(q config.Queue) sluice.QueueConfig {
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

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
