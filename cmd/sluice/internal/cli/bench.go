package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
	"github.com/sluicehq/sluice/internal/buildinfo"
)

func (a *app) benchCommand() *cobra.Command {
	cfg := bench.Config{}
	var asJSON bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure enqueue and work throughput on bench tables of a database",
		Long: "bench creates its own tables under the prefix " + bench.DefaultPrefix + " (dropping any left over),\n" +
			"optionally preloads finished rows, bulk-enqueues no-op jobs and works them down.\n" +
			"With --latency it enqueues single jobs while the workers run and reports the time\n" +
			"from the start of each enqueue to its handler's start. --latency-source picks the path:\n" +
			"  inprocess  the workers' own client, at --rate per second; its Enqueue wakes them in-process\n" +
			"  client     a second client on its own connections, as a web process or another node enqueues\n" +
			"  sql        a plain INSERT INTO the jobs table on its own connection, as a non-Go application does\n" +
			"The last two send a job every --gap on average (at random, from half to one and a half\n" +
			"times it), so that each lands on idle workers.\n" +
			"With --sustained it enqueues --jobs at a steady --rate in batches while the workers run, and\n" +
			"reports throughput, latency and memory per --interval. --enqueue-only and --work-only split a\n" +
			"bulk run so that several processes can work one backlog under one --prefix.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(bench.Sources, cfg.Source) {
				return usagef("--latency-source must be one of %s", strings.Join(bench.Sources, ", "))
			}
			idle := cfg.Source != bench.SourceInProcess
			if idle && cmd.Flags().Changed("rate") {
				return usagef("--rate applies to --latency-source %s only; the other sources use --gap", bench.SourceInProcess)
			}
			if (cmd.Flags().Changed("latency-source") || cmd.Flags().Changed("gap")) && !cfg.Latency {
				return usagef("--latency-source and --gap need --latency")
			}
			modes := 0
			for _, on := range []bool{cfg.Latency, cfg.Sustained, cfg.EnqueueOnly, cfg.WorkOnly} {
				if on {
					modes++
				}
			}
			if modes > 1 {
				return usagef("--latency, --sustained, --enqueue-only and --work-only are separate modes; pick one")
			}
			if cmd.Flags().Changed("interval") && !cfg.Sustained {
				return usagef("--interval needs --sustained")
			}
			if cfg.Sustained && !cmd.Flags().Changed("rate") {
				return usagef("--sustained needs --rate, the enqueues per second to hold")
			}
			if cfg.Interval <= 0 {
				return usagef("--interval must be positive")
			}
			if cfg.WorkOnly && (cmd.Flags().Changed("jobs") || cmd.Flags().Changed("finished-rows") || cmd.Flags().Changed("partitions")) {
				return usagef("--work-only works the jobs that an --enqueue-only run left; --jobs, --finished-rows and --partitions are that run's")
			}
			if cfg.Latency && !cmd.Flags().Changed("jobs") {
				cfg.Jobs = 1000 // a few seconds at the default rate
				if idle {
					cfg.Jobs = 100 // some 20 seconds at the default gap
				}
			}
			if cfg.Jobs < 1 || cfg.Concurrency < 1 || cfg.PayloadBytes < 0 || cfg.FinishedRows < 0 || cfg.Rate <= 0 || cfg.Gap <= 0 {
				return usagef("--jobs, --concurrency, --rate and --gap must be positive; --payload-bytes and --finished-rows must not be negative")
			}
			cfg.URL, cfg.ListenURL = a.url(), a.listenURL
			cfg.Logger = a.log
			cfg.Progress = a.benchProgress()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			res, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			res.System = "sluice " + buildinfo.Get().Version
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(res)
			}
			return printBench(a.stdout, res)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Jobs, "jobs", 100_000, "jobs to enqueue and work; with --latency, 1000 unless given (100 from the client and sql sources)")
	f.IntVar(&cfg.Concurrency, "concurrency", 100, "workers")
	f.IntVar(&cfg.PayloadBytes, "payload-bytes", 0, "payload padding per job")
	f.IntVar(&cfg.FinishedRows, "finished-rows", 0, "finished rows to preload before the run")
	f.IntVar(&cfg.Partitions, "partitions", 0, "spread the jobs over this many partitions (bulk mode)")
	f.BoolVar(&cfg.Fair, "fair", false, "make the bench queue fair: true")
	f.BoolVar(&cfg.Latency, "latency", false, "latency mode: single enqueues while the workers run (see --latency-source)")
	f.Float64Var(&cfg.Rate, "rate", bench.DefaultRate, "enqueues per second in --latency mode from the inprocess source, and in --sustained mode")
	f.StringVar(&cfg.Source, "latency-source", bench.SourceInProcess, "where --latency jobs come from: "+strings.Join(bench.Sources, ", "))
	f.DurationVar(&cfg.Gap, "gap", bench.DefaultGap, "mean gap between --latency jobs from the client and sql sources")
	f.BoolVar(&cfg.Sustained, "sustained", false, "sustained mode: enqueue --jobs at a steady --rate while the workers run; figures per --interval")
	f.DurationVar(&cfg.Interval, "interval", bench.DefaultInterval, "the period of the --sustained figures")
	f.BoolVar(&cfg.EnqueueOnly, "enqueue-only", false, "only create the bench tables and enqueue --jobs, keeping the tables for --work-only runs")
	f.BoolVar(&cfg.WorkOnly, "work-only", false, "only work the jobs an --enqueue-only run left (with the same --prefix), "+
		"beside other such processes, until none is pending or running; the tables are kept")
	f.DurationVar(&cfg.Timeout, "timeout", bench.DefaultTimeout, "give up when the work phase takes longer")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the bench tables after the run, for inspection")
	f.BoolVar(&asJSON, "json", false, "print one JSON line")
	// For profiling and for running benches side by side; not everyday use.
	f.StringVar(&cfg.Prefix, "prefix", bench.DefaultPrefix, "table prefix of the bench tables")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	_ = f.MarkHidden("prefix")
	_ = f.MarkHidden("cpuprofile")
	return cmd
}

// benchProgress shows a progress bar per phase on a terminal, and a plain
// line every few seconds otherwise (scripts and CI logs).
func (a *app) benchProgress() func(bench.Progress) {
	if f, ok := a.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var bar *progressbar.ProgressBar
		phase := ""
		return func(p bench.Progress) {
			if p.Phase != phase {
				phase = p.Phase
				bar = progressbar.NewOptions64(p.Total, progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetDescription(p.Phase), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("rows"), progressbar.OptionThrottle(200*time.Millisecond),
					progressbar.OptionClearOnFinish())
			}
			_ = bar.Set64(p.Done)
			if p.Final {
				_ = bar.Finish()
				phase = ""
			}
		}
	}
	last := time.Now() // the first line after a few seconds, not at once
	return func(p bench.Progress) {
		if !p.Final && time.Since(last) < 3*time.Second {
			return
		}
		last = time.Now()
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.Done) / s
		}
		state := "..."
		if p.Final {
			state = "done"
		}
		fmt.Fprintf(a.stderr, "sluice bench: %s %d/%d in %s (%.0f/s) %s\n", p.Phase, p.Done, p.Total,
			p.Elapsed.Round(100*time.Millisecond), rate, state)
	}
}

func printBench(out io.Writer, r *bench.Result) error {
	w := newTable(out)
	fmt.Fprintf(w, "database\t%s\n", r.DB)
	if r.Source != "" {
		fmt.Fprintf(w, "mode\t%s (source %s)\n", r.Mode, r.Source)
	} else {
		fmt.Fprintf(w, "mode\t%s\n", r.Mode)
	}
	fmt.Fprintf(w, "jobs\t%d (concurrency %d, payload %d bytes, %d finished rows preloaded)\n",
		r.Jobs, r.Concurrency, r.PayloadBytes, r.FinishedRows)
	fmt.Fprintf(w, "insert\t%.0f jobs/s\n", r.InsertPerS)
	fmt.Fprintf(w, "work\t%.0f jobs/s\n", r.WorkPerS)
	fmt.Fprintf(w, "latency\tp50 %.1f ms, p99 %.1f ms\n", r.LatencyP50, r.LatencyP99)
	fmt.Fprintf(w, "peak RSS\t%.1f MB\n", r.PeakRSSMB)
	for _, iv := range r.Intervals {
		fmt.Fprintf(w, "at %s\t%.0f jobs/s, backlog %d, latency p50 %.1f ms, p99 %.1f ms, RSS %.1f MB\n",
			time.Duration(iv.EndS*float64(time.Second)).Round(100*time.Millisecond), iv.WorkPerS, iv.Backlog, iv.LatencyP50, iv.LatencyP99, iv.RSSMB)
	}
	return w.Flush()
}
