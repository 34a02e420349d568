package driver

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// TypeSettings is what a job of Type takes when an INSERT of plain SQL
// leaves queue, max_attempts or dedupe out (or gives ” or 0, their zero
// values, as EnqueueParams does): the settings of the type's
// configuration, kept in sluice_types, where the database's insert
// trigger reads them (docs/reference.md "Job table").
type TypeSettings struct {
	Type        string
	Queue       string
	MaxAttempts int
	Dedupe      string
}

// Check refuses settings that no job may take, naming the field.
func (s TypeSettings) Check() error {
	switch {
	case s.Type == "" || len(s.Type) > sluicetype.MaxTypeLen:
		return fmt.Errorf("type %q: want 1 to %d bytes", s.Type, sluicetype.MaxTypeLen)
	case s.Queue == "" || len(s.Queue) > sluicetype.MaxQueueLen:
		return fmt.Errorf("type %s: queue %q: want 1 to %d bytes", s.Type, s.Queue, sluicetype.MaxQueueLen)
	case s.MaxAttempts < 1:
		return fmt.Errorf("type %s: max_attempts %d: must be at least 1", s.Type, s.MaxAttempts)
	case s.Dedupe != sluicetype.DedupePermanent && s.Dedupe != sluicetype.DedupeActive:
		return fmt.Errorf("type %s: dedupe %q: want permanent or active", s.Type, s.Dedupe)
	}
	return nil
}

// SyncTypesParams is the settings SyncTypes records.
type SyncTypesParams struct {
	Types []TypeSettings
}

// ServeTypesParams names the types whose handlers a process runs.
type ServeTypesParams struct {
	Types []string
}

// UnservedTypesParams says how recently a process must have served a type
// (ServeTypes) for its pending jobs not to count as waiting for a handler.
type UnservedTypesParams struct {
	Within time.Duration
}

// ServeQueuesParams names the queues a process claims jobs from.
type ServeQueuesParams struct {
	Queues []string
}

// UnservedQueuesParams says how recently a process must have served a
// queue (ServeQueues) for its pending jobs not to count as waiting in a
// queue nothing runs.
type UnservedQueuesParams struct {
	Within time.Duration
}
