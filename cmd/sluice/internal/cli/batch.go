package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/config"
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

// batchDriver loads the config and opens the migrated database.
func (a *app) batchDriver(cmd *cobra.Command) (*config.File, driver.Driver, error) {
	f, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	d, err := a.open()
	if err != nil {
		return nil, nil, err
	}
	if _, err := driver.CheckSchema(cmd.Context(), d); err != nil {
		return nil, nil, err
	}
	return f, d, nil
}

// batchOf builds the named batch from the config.
func (a *app) batchOf(f *config.File, name string) (*batch.Batch, error) {
	c, ok := f.Batches[name]
	if !ok {
		names := make([]string, 0, len(f.Batches))
		for n := range f.Batches {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, usagef("no batch %q in the config (batches: %s)", name, strings.Join(names, ", "))
	}
	b := &batch.Batch{
		Name:                name,
		Source:              c.Source,
		Key:                 c.Key,
		ChunkSize:           c.Chunk.Size,
		TargetChunkDuration: c.Chunk.Target,
		MinChunk:            c.Chunk.Min,
		MaxChunk:            c.Chunk.Max,
		Throttle: batch.Throttle{Sleep: c.Throttle.Sleep, MaxRowsPerSec: float64(c.Throttle.MaxRowsPerS),
			Query: c.Throttle.Query, Threshold: float64(c.Throttle.Threshold), Poll: c.Throttle.PollInterval},
		Retry:    batch.Retry{Attempts: c.Retry.Attempts, Base: c.Retry.Base, Max: c.Retry.Max},
		Parallel: c.Parallel,
		Lease:    c.Lease,
		Log:      a.log,
	}
	if s := c.Shards; s != nil {
		switch {
		case s.Values != nil:
			b.Shards.Values = s.Values
		case s.Query != "":
			b.Shards.Query = s.Query
		default:
			b.Shards.Window = &batch.Window{Column: s.Column, From: s.FromTime, To: s.ToTime, Step: s.Step}
		}
	}
	if c.Sink.HTTP != nil {
		b.Sink = batch.HTTPSink{URL: c.Sink.HTTP.URL, Secret: c.Sink.HTTP.Secret, Timeout: c.Sink.HTTP.Timeout, Headers: c.Sink.HTTP.Headers}
	} else {
		b.Sink = batch.SQLSink{Statement: c.Sink.SQL}
	}
	return b, nil
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

--dry-run prints the next chunk's SQL and how many rows it returns, and writes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if shards < 0 || interval <= 0 {
				return usagef("--shards must not be negative and --interval must be positive")
			}
			f, d, err := a.batchDriver(cmd)
			if err != nil {
				return err
			}
			b, err := a.batchOf(f, args[0])
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
				if s, ok := b.Sink.(batch.SQLSink); ok {
					fmt.Fprintf(a.stdout, "sink: %s\n", s.Statement)
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
// display and returns the last snapshot.
func (a *app) batchProgress(b *batch.Batch, interval time.Duration) func() batch.Progress {
	var last batch.Progress
	out, ok := a.stdout.(*os.File)
	if ok && term.IsTerminal(int(out.Fd())) {
		bar := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(out), progressbar.OptionSetDescription(b.Name),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(200*time.Millisecond))
		b.Progress = func(p batch.Progress) {
			last = p
			if p.Total > 0 {
				bar.ChangeMax64(p.Total)
			}
			desc := b.Name
			if p.Throttled != "" {
				desc += " (" + p.Throttled + ")"
			}
			bar.Describe(desc)
			bar.Set64(p.Rows)
		}
		return func() batch.Progress {
			bar.Finish()
			fmt.Fprintln(out)
			return last
		}
	}
	var printed time.Time
	var lastWhy string
	b.Progress = func(p batch.Progress) {
		last = p
		if p.Throttled != "" && p.Throttled != lastWhy {
			fmt.Fprintf(a.stdout, "batch %s shard %s: %s\n", p.Batch, p.Shard, p.Throttled)
		}
		lastWhy = p.Throttled
		if time.Since(printed) < interval {
			return
		}
		printed = time.Now()
		line := fmt.Sprintf("batch %s: %d rows, %.0f rows/s, chunk %d", p.Batch, p.Rows, p.Rate, p.ChunkSize)
		if p.ETA > 0 {
			line += fmt.Sprintf(", %d/%d, ETA %s", p.Rows, p.Total, p.ETA.Round(time.Second))
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
		RunE: func(cmd *cobra.Command, args []string) error {
			_, d, err := a.batchDriver(cmd)
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			cps, err := batch.Checkpoints(cmd.Context(), d, name)
			if err != nil {
				return err
			}
			if asJSON {
				if cps == nil {
					cps = []batch.Checkpoint{}
				}
				return json.NewEncoder(a.stdout).Encode(cps)
			}
			if len(cps) == 0 {
				fmt.Fprintln(a.stdout, "no checkpoints")
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "BATCH\tSHARD\tSTATUS\tROWS\tCHUNKS\tCHUNK SIZE\tUPDATED\tCURSOR\tLAST ERROR")
			for _, c := range cps {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", c.Batch, c.Shard, c.Status, c.RowsDone, c.ChunksDone,
					c.ChunkSize, c.UpdatedAt.UTC().Format(time.RFC3339), c.Cursor, oneLine(c.LastError))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func (a *app) batchSetCommand(verb, short string, fn func(ctx context.Context, d driver.Driver, name string) (int64, error)) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, d, err := a.batchDriver(cmd)
			if err != nil {
				return err
			}
			n, err := fn(cmd.Context(), d, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "batch %s: %s %d shards\n", args[0], pastTense[verb], n)
			return nil
		},
	}
}

var pastTense = map[string]string{"pause": "paused", "resume": "resumed", "reset": "reset"}

// batchJobType is the job type that runs one shard of a configured batch.
func batchJobType(name string) string { return "batch:" + name }

// batchTypes gives each configured batch a job type whose jobs run one
// shard each, so that `sluice batch enqueue` spreads a batch over workers.
// It also returns the batches, for the caller to give them the metrics of
// the client that will run those jobs.
func (a *app) batchTypes(f *config.File) (map[string]sluice.Type, []*batch.Batch, error) {
	types := map[string]sluice.Type{}
	var batches []*batch.Batch
	for name := range f.Batches {
		b, err := a.batchOf(f, name)
		if err != nil {
			return nil, nil, err
		}
		// Defaults are filled in now, so that shard jobs running at once
		// only read b.
		if err := b.Validate(); err != nil {
			return nil, nil, err
		}
		batches = append(batches, b)
		types[batchJobType(name)] = sluice.Type{Queue: sluice.DefaultQueue, Dedupe: driver.DedupeActive, Handler: sluice.HandlerFunc(
			func(ctx context.Context, job *sluice.Job) error {
				var p struct {
					Shard string `json:"shard"`
				}
				if err := job.Decode(&p); err != nil || p.Shard == "" {
					return sluice.Permanent(fmt.Errorf("batch job payload needs a shard: %s", job.Payload))
				}
				d := a.drv
				switch err := b.RunShard(ctx, d, p.Shard); {
				case err == nil:
					return nil
				case errors.Is(err, batch.ErrPaused):
					return sluice.Snooze(30 * time.Second) // resumes once the batch is resumed
				case errors.Is(err, batch.ErrBusy), errors.Is(err, batch.ErrLost), ctx.Err() != nil:
					return err // another runner has it for now: retry with backoff
				default:
					return sluice.Permanent(err) // the shard is marked failed
				}
			})}
	}
	return types, batches, nil
}

func (a *app) batchEnqueueCommand() *cobra.Command {
	var partition string
	cmd := &cobra.Command{
		Use:   "enqueue NAME",
		Short: "Enqueue one job per shard, so that `sluice work` processes spread the batch",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, d, err := a.batchDriver(cmd)
			if err != nil {
				return err
			}
			b, err := a.batchOf(f, args[0])
			if err != nil {
				return err
			}
			shards, err := b.ShardNames(cmd.Context(), d)
			if err != nil {
				return err
			}
			c, err := sluice.NewClient(sluice.Config{Driver: d, Logger: a.log})
			if err != nil {
				return err
			}
			ps := make([]sluice.EnqueueParams, len(shards))
			for i, s := range shards {
				ps[i] = sluice.EnqueueParams{Type: batchJobType(args[0]), Key: "batch:" + args[0] + ":" + s,
					Dedupe: driver.DedupeActive, Payload: map[string]string{"shard": s}, Partition: partition}
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
			return json.NewEncoder(a.stdout).Encode(map[string]int{"inserted": len(rs) - dups, "duplicates": dups})
		},
	}
	// A tenant's backfill run as a batch shares a fair queue with the
	// tenant's other work instead of crowding out everyone else's.
	cmd.Flags().StringVar(&partition, "partition", "", "fairness key of the shard jobs, e.g. the tenant whose backfill this is")
	return cmd
}
