package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/dur"
	"github.com/sluicehq/sluice/sluicetype"
)

func (a *app) jobsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "List, show, retry, cancel and purge jobs"}
	cmd.AddCommand(a.jobsListCommand(), a.jobsShowCommand(), a.jobsRetryCommand(), a.jobsCancelCommand(), a.jobsPurgeCommand())
	return cmd
}

func (a *app) jobsListCommand() *cobra.Command {
	var p sluicetype.ListParams
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs newest first; page with --after-id",
		Args:  cobra.NoArgs,
		// Before the client opens: a bad flag exits 2 without touching
		// the database.
		PreRunE: func(*cobra.Command, []string) error {
			if p.Limit < 1 || p.Limit > 1000 {
				return usagef("--limit %d: want 1 to 1000", p.Limit)
			}
			return nil
		},
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			jobs, err := c.Jobs(ctx, p)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONLines(a.stdout, jobs)
			}
			if err := writeTable(a.stdout, "ID\tSTATUS\tQUEUE\tTYPE\tKEY\tATTEMPTS\tNEXT RUN / FINISHED\tLAST ERROR", jobs,
				func(w io.Writer, j sluicetype.JobRow) {
					when := j.NextRunAt
					if j.FinishedAt != nil {
						when = *j.FinishedAt
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Status, j.Queue, j.Type, j.Key,
						j.Attempts, j.MaxAttempts, when.Format(time.RFC3339), firstLine(j.LastError, 60))
				}); err != nil {
				return err
			}
			if len(jobs) == p.Limit {
				fmt.Fprintf(a.stderr, "more: --after-id %d\n", jobs[len(jobs)-1].ID)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar((*string)(&p.Status), "status", "", "pending, processing, success, failed or cancelled")
	f.StringVar(&p.Type, "type", "", "job type")
	f.StringVar(&p.Queue, "queue", "", "queue")
	f.StringVar(&p.KeyPrefix, "key-prefix", "", "business keys starting with this")
	f.IntVar(&p.Limit, "limit", 50, "rows per page (at most 1000)")
	f.Int64Var(&p.AfterID, "after-id", 0, "list jobs older than this id (the last id of the previous page)")
	jsonFlag(cmd, &asJSON, "one JSON object per line")
	return cmd
}

func firstLine(s string, n int) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		s = driver.Truncate(s, n, false) + "…"
	}
	return s
}

// withJob is the RunE of a command on the job whose id is its argument:
// the id is checked before the client opens, so that a bad id exits 2
// without touching the database.
func (a *app) withJob(run func(ctx context.Context, c *sluice.Client, id int64) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		id, err := parseID(args[0])
		if err != nil {
			return err
		}
		return a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error { return run(ctx, c, id) })(cmd, args)
	}
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("job id %q: want a positive integer", s)
	}
	return id, nil
}

func (a *app) jobsShowCommand() *cobra.Command {
	var asJSON, logs bool
	cmd := &cobra.Command{
		Use:   "show ID [--logs]",
		Short: "Show one job with all its columns, and with --logs its attempts' output",
		Args:  cobra.ExactArgs(1),
		RunE: a.withJob(func(ctx context.Context, c *sluice.Client, id int64) error {
			j, err := c.Job(ctx, id)
			if err != nil {
				return err
			}
			var ls []sluicetype.AttemptLog
			if logs {
				if ls, err = c.AttemptLogs(ctx, id, 0); err != nil {
					return err
				}
			}
			if asJSON {
				if logs {
					return writeJSON(a.stdout, struct {
						Job  *sluicetype.JobRow      `json:"job"`
						Logs []sluicetype.AttemptLog `json:"logs"`
					}{j, ls})
				}
				return writeJSON(a.stdout, j)
			}
			b, err := json.MarshalIndent(j, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, string(b))
			if logs {
				writeLogs(a.stdout, ls)
			}
			return nil
		}),
	}
	jsonFlag(cmd, &asJSON, "compact JSON (with --logs: {\"job\": ..., \"logs\": [...]})")
	cmd.Flags().BoolVar(&logs, "logs", false, "also print the output kept of each attempt (a command's stdout and stderr)")
	return cmd
}

// writeLogs prints each attempt's log under a header line. A log is a
// command's raw output, so it goes through terminalSafe, as job tables do.
func writeLogs(out io.Writer, logs []sluicetype.AttemptLog) {
	if len(logs) == 0 {
		fmt.Fprintln(out, "no attempt logs")
		return
	}
	w := &terminalSafe{w: out}
	for _, l := range logs {
		fmt.Fprintf(w, "--- attempt %d: %d bytes", l.Attempt, l.Bytes)
		if l.Omitted > 0 {
			fmt.Fprintf(w, ", %d left out", l.Omitted)
		}
		fmt.Fprintf(w, ", written %s ---\n", l.CreatedAt.UTC().Format(time.RFC3339))
		fmt.Fprint(w, l.Text)
		if !strings.HasSuffix(l.Text, "\n") {
			fmt.Fprintln(w)
		}
	}
}

func (a *app) jobsRetryCommand() *cobra.Command {
	var failed bool
	var typ string
	cmd := &cobra.Command{
		Use:   "retry ID | retry --failed [--type T]",
		Short: "Move failed or cancelled jobs back to pending",
		PreRunE: func(_ *cobra.Command, args []string) error {
			if failed == (len(args) == 1) || len(args) > 1 {
				return usagef("retry takes one job ID, or --failed (with an optional --type)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if failed {
				return a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
					n, err := c.RetryFailed(ctx, typ)
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "retried %d jobs\n", n)
					return nil
				})(cmd, args)
			}
			return a.withJob(func(ctx context.Context, c *sluice.Client, id int64) error {
				if err := c.Retry(ctx, id); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "job %d is pending again\n", id)
				return nil
			})(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&failed, "failed", false, "retry every failed job")
	cmd.Flags().StringVar(&typ, "type", "", "with --failed: only jobs of this type")
	return cmd
}

func (a *app) jobsCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending, failed or running job (a running one's handler is stopped)",
		Args:  cobra.ExactArgs(1),
		RunE: a.withJob(func(ctx context.Context, c *sluice.Client, id int64) error {
			if err := c.Cancel(ctx, id); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "job %d cancelled\n", id)
			return nil
		}),
	}
}

func (a *app) jobsPurgeCommand() *cobra.Command {
	var status sluicetype.Status
	var older string
	var age time.Duration
	cmd := &cobra.Command{
		Use:   "purge --status S --older-than 7d",
		Short: "Delete finished jobs, in chunks",
		Args:  cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if status == "" || older == "" {
				return usagef("purge needs --status and --older-than")
			}
			if !sluicetype.IsFinal(status) {
				return usagef("--status %q: want success, failed or cancelled", status)
			}
			var err error
			if age, err = dur.Parse(older); err != nil {
				return usagef("--older-than: %v", err)
			}
			return nil
		},
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			n, err := c.Purge(ctx, status, age)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "deleted %d jobs\n", n)
			return nil
		}),
	}
	cmd.Flags().StringVar((*string)(&status), "status", "", "success, failed or cancelled")
	cmd.Flags().StringVar(&older, "older-than", "", "finished longer ago than this, e.g. 7d")
	return cmd
}
