package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

func (a *app) batchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Resumable keyset batches over large tables (batches: in the config)",
	}
	cmd.AddCommand(a.batchRunCommand(), a.batchStatusCommand(), a.batchEnqueueCommand(),
		a.batchSetCommand("pause", "Stop a batch's runners at their next chunk and keep them from starting", batch.Pause),
		a.batchSetCommand("resume", "Let a paused batch run again", batch.Resume),
		a.batchSetCommand("reset", "Delete a batch's checkpoints, so that the next run starts over", batch.Reset))
	return cmd
}

// batchOf opens the migrated database and builds the named batch from
// the config.
func (a *app) batchOf(cmd *cobra.Command, name string) (*batch.Batch, driver.Driver, error) {
	f, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	d, err := a.migrated(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	c, ok := f.Batches[name]
	if !ok {
		names := make([]string, 0, len(f.Batches))
		for n := range f.Batches {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, nil, usagef("no batch %q in the config (batches: %s)", name, strings.Join(names, ", "))
	}
	b, err := setup.Batch(name, c, a.openDest)
	if err != nil {
		return nil, nil, err
	}
	b.Log = a.log
	return b, d, nil
}

func (a *app) batchRunCommand() *cobra.Command {
	var dryRun, count bool
	var shards int
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "run NAME",
		Short: "Run a batch from its checkpoint, showing progress",
		Long: `Run every unfinished shard of the batch from its checkpoint. On a terminal a
progress bar shows the rows done, the rate and (with --count) the ETA; otherwise a
plain line is printed every --interval. Interrupting or killing the run loses
nothing: the next run resumes after the last checkpointed chunk.

--dry-run runs every query the run would (the shard query, the next chunk's query,
the throttle query, with --count the counts, and an SQL sink's statements on that
chunk in a transaction it rolls back), prints the chunk's SQL and row count, and
writes nothing; a query that fails fails the dry run.

SIGINT or SIGTERM stops the run: the chunk in flight is rolled back, the checkpoint
keeps every chunk committed, and the run says so and exits 0; the next run resumes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if shards < 0 || interval <= 0 {
				return usagef("--shards must not be negative and --interval must be positive")
			}
			b, d, err := a.batchOf(cmd, args[0])
			if err != nil {
				return err
			}
			if shards > 0 {
				b.Parallel = shards
			}
			b.CountTotal = count
			if dryRun {
				res, err := b.DryRun(cmd.Context(), d)
				if err != nil {
					return err
				}
				if res.SQL == "" {
					fmt.Fprintf(a.stdout, "batch %s: every shard is done; nothing to run\n", b.Name)
					return nil
				}
				fmt.Fprintf(a.stdout, "shard: %s\nsql: %s\nargs: %v\nrows: %d\n", res.Shard, res.SQL, res.Args, res.Rows)
				if res.Throttle != nil {
					fmt.Fprintf(a.stdout, "throttle: the query returned %g (threshold %g)\n", *res.Throttle, b.Throttle.Threshold)
				}
				if b.CountTotal {
					fmt.Fprintf(a.stdout, "total: %d rows\n", res.Total)
				}
				printSink(a.stdout, b.Sink)
				if res.SinkChecked {
					fmt.Fprintln(a.stdout, "sink: the statements ran on this chunk in a transaction that was rolled back")
				}
				fmt.Fprintln(a.stdout, "dry run: nothing written")
				return nil
			}
			finish := a.batchProgress(b, interval)
			err = b.Run(cmd.Context(), d)
			last := finish()
			switch {
			case errors.Is(err, batch.ErrPaused):
				// Paused on purpose: not a failure for cron.
				fmt.Fprintf(a.stderr, "sluice: %s\n", oneLine(err.Error()))
				return nil
			case err != nil && cmd.Context().Err() != nil:
				// A signal: the shards stopped at their chunk boundary (the
				// chunk in flight rolled back), which is a clean stop.
				fmt.Fprintf(a.stdout, "batch %s: stopped by a signal; the checkpoints hold every chunk committed, %d rows (%d in this run); run it again to resume\n",
					b.Name, last.Rows, last.RunRows)
				return nil
			case err != nil:
				return err
			}
			fmt.Fprintf(a.stdout, "batch %s: done, %d rows (%d in this run, %.0f rows/s)\n", b.Name, last.Rows, last.RunRows, last.Rate)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "print the next chunk's SQL and row count; write nothing")
	fl.IntVar(&shards, "shards", 0, "shards to run at once (default: the batch's parallel, or 1)")
	fl.BoolVar(&count, "count", false, "COUNT(*) each shard first, for an ETA (can be slow on large tables)")
	fl.DurationVar(&interval, "interval", 5*time.Second, "time between progress lines when not on a terminal")
	return cmd
}

// batchProgress installs a progress display on b: a bar on a terminal,
// plain lines every interval otherwise. The returned func ends the
// display and returns the last snapshot. Totals are known before the
// first call (Run counts every shard first), so a bar's size never
// changes; without --count there is no total, and a spinner shows the
// rows and rate instead of a count out of "-".
func (a *app) batchProgress(b *batch.Batch, interval time.Duration) func() batch.Progress {
	var last batch.Progress
	out, ok := a.stdout.(*os.File)
	if ok && term.IsTerminal(int(out.Fd())) {
		var bar *progressbar.ProgressBar
		b.Progress = func(p batch.Progress) {
			last = p
			if bar == nil {
				opts := []progressbar.Option{progressbar.OptionSetWriter(out), progressbar.OptionSetDescription(b.Name),
					progressbar.OptionThrottle(200 * time.Millisecond)}
				max := int64(-1)
				if p.Total > 0 {
					max = p.Total
					opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"))
				}
				bar = progressbar.NewOptions64(max, opts...)
			}
			desc := b.Name
			if p.Total <= 0 {
				desc += fmt.Sprintf(": %d rows, %.0f rows/s", p.Rows, p.Rate)
			}
			if p.Throttled != "" {
				desc += " (" + p.Throttled + ")"
			}
			bar.Describe(desc)
			bar.Set64(p.Rows)
		}
		return func() batch.Progress {
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(out)
			}
			return last
		}
	}
	// The first line comes after one interval, not at the first chunk,
	// whose rate is that of a chunk before any pacing.
	printed := time.Now()
	var lastWhy string
	b.Progress = func(p batch.Progress) {
		last = p
		if p.Throttled != "" && p.Throttled != lastWhy {
			fmt.Fprintf(a.stdout, "batch %s shard %s: %s\n", p.Batch, p.Shard, p.Throttled)
		}
		lastWhy = p.Throttled
		if p.ChunkSize == 0 || time.Since(printed) < interval {
			return // only chunks make a line; a shard's end or a throttle has no chunk size
		}
		printed = time.Now()
		line := fmt.Sprintf("batch %s: %d rows, %.0f rows/s, chunk %d", p.Batch, p.Rows, p.Rate, p.ChunkSize)
		if p.Total > 0 {
			line += fmt.Sprintf(", %d/%d (%.0f%%)", p.Rows, p.Total, 100*float64(min(p.Rows, p.Total))/float64(p.Total))
			if p.ETA > 0 {
				line += fmt.Sprintf(", ETA %s", p.ETA.Round(time.Second))
			}
		}
		fmt.Fprintln(a.stdout, line)
	}
	return func() batch.Progress { return last }
}

func (a *app) batchStatusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the checkpoints of one batch or of all",
		Args:  cobra.MaximumNArgs(1),
		RunE: a.withDriver(func(ctx context.Context, d driver.Driver, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			cps, err := batch.Checkpoints(ctx, d, name)
			if err != nil {
				return err
			}
			if asJSON {
				if cps == nil {
					cps = []batch.Checkpoint{}
				}
				return writeJSON(a.stdout, cps)
			}
			if len(cps) == 0 {
				fmt.Fprintln(a.stdout, "no checkpoints")
				return nil
			}
			return writeTable(a.stdout, "BATCH\tSHARD\tSTATUS\tROWS\tCHUNKS\tCHUNK SIZE\tUPDATED\tCURSOR\tLAST ERROR", cps,
				func(w io.Writer, c batch.Checkpoint) {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", c.Batch, c.Shard, c.Status, c.RowsDone, c.ChunksDone,
						c.ChunkSize, c.UpdatedAt.UTC().Format(time.RFC3339), c.Cursor, oneLine(c.LastError))
				})
		}),
	}
	jsonFlag(cmd, &asJSON, "print a JSON array")
	return cmd
}

func (a *app) batchSetCommand(verb, short string, fn func(ctx context.Context, d driver.Driver, name string) (int64, error)) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		// On a client, whose audit trail records the change.
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, args []string) error {
			n, err := fn(ctx, c.Driver(), args[0])
			if err != nil {
				return err
			}
			c.RecordAction(ctx, "batch."+verb, "batch "+args[0], n)
			fmt.Fprintf(a.stdout, "batch %s: %s %d shards\n", args[0], pastTense[verb], n)
			return nil
		}),
	}
}

var pastTense = map[string]string{"pause": "paused", "resume": "resumed", "reset": "reset"}

// openDest opens a copy sink's destination, once per URL: batch jobs of
// one process share its pool. It is not migrated: sluice keeps no tables there.
func (a *app) openDest(url string) (driver.Driver, error) {
	if d, ok := a.dests[url]; ok {
		return d, nil
	}
	d, err := dburl.Open(url, dburl.Options{MustExist: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dburl.Redact(url), err)
	}
	if a.dests == nil {
		a.dests = map[string]driver.Driver{}
	}
	a.dests[url] = d
	return d, nil
}

func (a *app) batchEnqueueCommand() *cobra.Command {
	var partition string
	cmd := &cobra.Command{
		Use:   "enqueue NAME",
		Short: "Enqueue one job per shard, so that `sluice work` processes spread the batch",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, d, err := a.batchOf(cmd, args[0])
			if err != nil {
				return err
			}
			ps, err := b.ShardJobs(cmd.Context(), d, partition)
			if err != nil {
				return err
			}
			c, err := sluice.NewClient(sluice.Config{Driver: d, Logger: a.log})
			if err != nil {
				return err
			}
			rs, err := c.EnqueueMany(cmd.Context(), ps)
			if err != nil {
				return err
			}
			dups := 0
			for _, r := range rs {
				if r.Duplicate {
					dups++
				}
			}
			return writeJSON(a.stdout, map[string]int{"inserted": len(rs) - dups, "duplicates": dups})
		},
	}
	// A tenant's backfill run as a batch shares a fair queue with the
	// tenant's other work instead of crowding out everyone else's.
	cmd.Flags().StringVar(&partition, "partition", "", "fairness key of the shard jobs, e.g. the tenant whose backfill this is")
	return cmd
}

// printSink shows a dry run what the sink would run per chunk.
func printSink(w io.Writer, s batch.Sink) {
	if c, ok := s.(batch.CopySink); ok {
		fmt.Fprintf(w, "sink: copy into %s on %s\n", c.Table, c.Dest.Name())
		s = c.Then
	}
	if q, ok := s.(batch.SQLSink); ok {
		for _, st := range q.Statements {
			fmt.Fprintf(w, "sink: %s\n", st)
		}
	}
}
