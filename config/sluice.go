package config

import (
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
)

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
			Handler:     h,
			Queue:       t.Queue,
			Timeout:     t.Timeout,
			Lease:       t.Lease,
			MaxAttempts: t.MaxAttempts,
			Backoff:     sluice.Backoff{Base: t.Backoff.Base, Max: t.Backoff.Max},
			Dedupe:      t.Dedupe,
			MaxRunning:  t.MaxRunning,
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
		MaxRunningPerPartition: q.MaxRunningPerPartition, PartitionMaxRunning: q.PartitionMaxRunning}
	if !q.Rate.IsZero() {
		qc.Rate = float64(q.Rate.N) / q.Rate.Per.Seconds()
	}
	return qc
}
