package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/sluicetype"
)

func (a *app) statsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per-queue counts of pending, processing and failed jobs, and per queue and type the jobs done and failed for good and the attempts retried in the last hour and day, with queue latency p50/p95 per type, and the pending jobs of types no handler serves",
		Args:  cobra.NoArgs,
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			snap, err := c.StatsSnapshot(ctx)
			if err != nil {
				return err
			}
			st := snap.Queues
			for i := range st {
				if q, ok := a.cfg.Queues[st[i].Queue]; ok {
					setup.Queue(q).ApplyTo(&st[i])
				}
			}
			if asJSON {
				return writeJSON(a.stdout, snap)
			}
			header := "QUEUE\tPENDING\tPROCESSING\tFAILED\tOLDEST PENDING\tPAUSED\tDONE 1H\tFAILED 1H\tRETRIED 1H\tDONE 24H\tFAILED 24H\tRETRIED 24H"
			if err := writeTable(a.stdout, header, st, func(w io.Writer, s sluicetype.QueueStats) {
				h, d := sluicetype.FiguresOf(s.FinishedHour), sluicetype.FiguresOf(s.FinishedDay)
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%v\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Queue, s.Pending, s.Processing, s.Failed,
					(time.Duration(s.OldestPendingAge * float64(time.Second))).Round(time.Second), s.Paused,
					h.Done, h.Failed, h.Retried, d.Done, d.Failed, d.Retried)
			}); err != nil {
				return err
			}
			if err := writeTypes(a.stdout, snap.Types); err != nil {
				return err
			}
			if err := writeWaiting(a.stdout, snap.WaitingForHandler); err != nil {
				return err
			}
			if err := writeUnservedQueues(a.stdout, snap.UnservedQueues); err != nil {
				return err
			}
			if err := writeCircuits(a.stdout, snap.Circuits); err != nil {
				return err
			}
			if err := writeRateBuckets(a.stdout, snap.RateBuckets); err != nil {
				return err
			}
			return a.printPartitions(st)
		}),
	}
	jsonFlag(cmd, &asJSON, "JSON output")
	return cmd
}

// writeTypes lists each job type's finished attempts and queue latency
// percentiles over the last hour and day, after the queue table.
func writeTypes(out io.Writer, types []sluicetype.TypeStats) error {
	header := "TYPE\tDONE 1H\tFAILED 1H\tRETRIED 1H\tWAIT P50 1H\tWAIT P95 1H\tDONE 24H\tFAILED 24H\tRETRIED 24H\tWAIT P50 24H\tWAIT P95 24H"
	return writeSection(out, header, types, func(w io.Writer, t sluicetype.TypeStats) {
		p50h, p95h := latencyText(t.LatencyHour)
		p50d, p95d := latencyText(t.LatencyDay)
		h, d := sluicetype.FiguresOf(t.FinishedHour), sluicetype.FiguresOf(t.FinishedDay)
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", t.Type,
			h.Done, h.Failed, h.Retried, p50h, p95h, d.Done, d.Failed, d.Retried, p50d, p95d)
	})
}

// writeWaiting lists the types whose pending jobs no process with a
// handler has served within sluice.HandlerWindow; nothing when none wait.
func writeWaiting(out io.Writer, waiting []sluicetype.TypeCount) error {
	return writeSection(out, "WAITING FOR A HANDLER\tPENDING", waiting, func(w io.Writer, t sluicetype.TypeCount) {
		fmt.Fprintf(w, "%s\t%d\n", t.Type, t.Pending)
	})
}

// writeUnservedQueues lists the queues whose pending jobs no process has
// claimed from within sluice.HandlerWindow; nothing when none wait.
func writeUnservedQueues(out io.Writer, queues []sluicetype.QueueCount) error {
	return writeSection(out, "WAITING IN A QUEUE NOTHING RUNS\tPENDING", queues, func(w io.Writer, q sluicetype.QueueCount) {
		fmt.Fprintf(w, "%s\t%d\n", q.Queue, q.Pending)
	})
}

// writeSection prints one of the tables that follow the queue table: a
// blank line, the header and a row per item; nothing at all when there
// are no items, so that an idle install's output stays short.
func writeSection[T any](out io.Writer, header string, items []T, row func(w io.Writer, item T)) error {
	if len(items) == 0 {
		return nil
	}
	return writeTable(out, "\n"+header, items, row)
}

// latencyText shows percentiles to the millisecond; "-" when no attempt
// started.
func latencyText(l *sluicetype.LatencyStats) (p50, p95 string) {
	if l == nil {
		return "-", "-"
	}
	d := func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
	}
	return d(l.P50), d(l.P95)
}

// writeCircuits lists the circuit breakers that are not plainly closed
// with no failures, after the queue table; nothing when all are.
func writeCircuits(out io.Writer, circuits []sluicetype.Circuit) error {
	var shown []sluicetype.Circuit
	for _, c := range circuits {
		if c.State != sluicetype.CircuitClosed || c.Failures > 0 {
			shown = append(shown, c)
		}
	}
	return writeSection(out, "CIRCUIT\tSTATE\tFAILURES\tOPENS\tUNTIL", shown, func(w io.Writer, c sluicetype.Circuit) {
		until := "-"
		switch {
		case c.Manual:
			until = "closed by hand"
		case !c.Expiry().IsZero():
			until = c.Expiry().UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", c.Type, c.State, c.Failures, c.Opens, until)
	})
}

// writeRateBuckets lists the cluster-wide rate limits' buckets after the
// circuits; nothing when no limit has taken a token yet.
func writeRateBuckets(out io.Writer, buckets []sluicetype.RateBucket) error {
	return writeSection(out, "RATE BUCKET\tTOKENS AT LAST TAKE\tLAST TAKE", buckets, func(w io.Writer, b sluicetype.RateBucket) {
		fmt.Fprintf(w, "%s\t%.1f\t%s\n", b.Name, b.Tokens, b.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	})
}

// printPartitions lists each queue's partitions with the largest backlog,
// with their running jobs against the caps.
func (a *app) printPartitions(st []sluicetype.QueueStats) error {
	w := newTable(a.stdout)
	header := false
	for _, s := range st {
		for _, p := range s.Partitions {
			if !header {
				fmt.Fprintf(w, "\nQUEUE\tPARTITION (top %d by backlog)\tPENDING\tRUNNING\tMAX RUNNING\n", sluice.TopPartitions)
				header = true
			}
			limit := "-"
			if p.MaxRunning > 0 {
				limit = fmt.Sprint(p.MaxRunning)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", s.Queue, p.Partition, p.Pending, p.Running, limit)
		}
	}
	return w.Flush()
}
