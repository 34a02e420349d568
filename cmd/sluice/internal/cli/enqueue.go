package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
)

func (a *app) enqueueCommand() *cobra.Command {
	var (
		key, payload, queue, delay, runAt, deadline, ndjson, dedupe, partition string
		progressTimeout                                                        string
		priority, maxAttempts                                                  int
	)
	cmd := &cobra.Command{
		Use:   "enqueue TYPE [flags] | enqueue --ndjson FILE|-",
		Short: "Enqueue one job, or many from NDJSON",
		Long: `Enqueue one job of TYPE and print {"id":N,"duplicate":false}. An existing
business key prints the existing id with "duplicate":true and exits 0.

With --ndjson, read one JSON object per line (type, key, payload, queue,
priority, delay, run_at, deadline, progress_timeout, max_attempts, dedupe,
partition) and enqueue
them all or none.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ndjson != "" {
				if len(args) > 0 {
					return usagef("enqueue --ndjson takes no TYPE argument")
				}
				return a.enqueueNDJSON(ctx, ndjson)
			}
			if len(args) != 1 {
				return usagef("enqueue needs exactly one TYPE argument (or --ndjson FILE)")
			}
			line := sluice.EnqueueRequest{Type: args[0], Key: key, Queue: queue, Priority: priority, Delay: delay,
				RunAt: runAt, Deadline: deadline, ProgressTimeout: progressTimeout, MaxAttempts: maxAttempts,
				Dedupe: dedupe, Partition: partition}
			if payload != "" {
				b, err := a.readPayload(payload)
				if err != nil {
					return err
				}
				line.Payload = b
			}
			p, err := line.Params()
			if err != nil {
				return err
			}
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			r, err := c.Enqueue(ctx, p)
			if err != nil {
				return err
			}
			return writeJSON(a.stdout, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&key, "key", "", "business key: a second job with the same key is not enqueued")
	f.StringVar(&payload, "payload", "", "payload: JSON, @FILE, or - for stdin")
	f.StringVar(&queue, "queue", "", "queue (default: the type's queue, or \"default\")")
	f.IntVar(&priority, "priority", 0, "priority; lower runs first")
	f.StringVar(&delay, "delay", "", "run after this long, e.g. 30s or 2h")
	f.StringVar(&runAt, "run-at", "", "run at this RFC 3339 time")
	f.StringVar(&deadline, "deadline", "", "RFC 3339 time by which the job must have started, or it is cancelled (default: the type's deadline)")
	f.StringVar(&progressTimeout, "progress-timeout", "", "a running job that reports no progress for this long, e.g. 5m, is stuck: its type's on_stuck applies (default: the type's progress_timeout)")
	f.IntVar(&maxAttempts, "max-attempts", 0, fmt.Sprintf("attempts before the job fails, 1 to %d (0 or unset: the type's, or %d)", sluice.MaxMaxAttempts, sluice.DefaultMaxAttempts))
	f.StringVar(&dedupe, "dedupe", "", "key dedupe mode: permanent (default) or active")
	f.StringVar(&partition, "partition", "", "fairness key, e.g. a tenant id: fair queues take turns between partitions")
	f.StringVar(&ndjson, "ndjson", "", "enqueue one job per line of FILE (- for stdin)")
	return cmd
}

// readPayload reads --payload: the JSON itself, @FILE, or - for stdin.
// It reads one byte past sluice.MaxPayloadBytes, so that an oversized
// payload is refused without reading all of it; the enqueue checks the rest.
func (a *app) readPayload(arg string) ([]byte, error) {
	var b []byte
	var err error
	switch {
	case arg == "-":
		b, err = io.ReadAll(io.LimitReader(a.stdin, sluice.MaxPayloadBytes+1))
	case strings.HasPrefix(arg, "@"):
		var f *os.File
		if f, err = os.Open(arg[1:]); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, sluice.MaxPayloadBytes+1))
			f.Close()
		}
	default:
		b = []byte(arg)
	}
	if err != nil {
		return nil, usagef("--payload: %v", err)
	}
	if len(b) > sluice.MaxPayloadBytes {
		return nil, &sluice.InputError{Field: "payload", Msg: fmt.Sprintf("more than %d bytes, at most %d allowed", sluice.MaxPayloadBytes, sluice.MaxPayloadBytes)}
	}
	return b, nil
}

// enqueueNDJSON checks every line before writing any, then inserts them all
// in one transaction.
func (a *app) enqueueNDJSON(ctx context.Context, path string) error {
	var r io.Reader = a.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return usagef("--ndjson: %v", err)
		}
		defer f.Close()
		r = f
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	var ps []sluice.EnqueueParams
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		l, err := sluice.DecodeEnqueueRequest(text)
		var p sluice.EnqueueParams
		if err == nil {
			p, err = l.Params()
		}
		if err == nil {
			err = c.ValidateEnqueue(p)
		}
		if err != nil {
			return usagef("--ndjson line %d: %v (nothing was enqueued)", n, err)
		}
		ps = append(ps, p)
	}
	if err := sc.Err(); err != nil {
		return usagef("--ndjson: %v (nothing was enqueued)", err)
	}
	// One EnqueueMany for the whole file: the driver takes its keys in one
	// global order, so that other enqueues of the same keys cannot deadlock
	// with it, and retries its own transaction if the database still picks
	// it as a victim.
	rs, err := c.EnqueueMany(ctx, ps)
	if err != nil {
		var ie *sluice.InputError
		if errors.As(err, &ie) {
			return usagef("--ndjson: %v (nothing was enqueued)", err)
		}
		return fmt.Errorf("%w (nothing was enqueued)", err)
	}
	inserted, dups := 0, 0
	for _, r := range rs {
		if r.Duplicate {
			dups++
		} else {
			inserted++
		}
	}
	return writeJSON(a.stdout, map[string]int{"inserted": inserted, "duplicates": dups})
}
