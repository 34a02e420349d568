package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
)

func (a *app) runCommand() *cobra.Command {
	var p sluice.RunParams
	var maxSeconds int
	cmd := &cobra.Command{
		Use:   "run",
		Short: "One bounded pass for cron: recover expired leases, then run up to --max-jobs jobs",
		Long: `Take the run lock of each queue and the type (a second pass while one is
active answers {"ok":true,"skipped":"another run is active"}), recover
expired leases, then claim jobs until --max-jobs per queue or --max-seconds.
Without --queue the pass runs every queue that the config's types (or
--type) are configured for. --max-seconds stops the claims only: jobs
already running finish, or meet their type's timeout, and the pass waits
for them (holding its run locks). It prints
{"ok":true,"done":N,"retried":R,"failed":F,"requeued":Q}: jobs that
succeeded, attempts that failed and will be retried, jobs that failed for
good, and jobs given back to pending without using an attempt (snoozed, interrupted by a signal, or of a type without a
handler here), with "warnings" naming a --queue that no type of the config
is configured for, a queue another pass held, and the types whose timeout
exceeds --max-seconds. An unknown --queue, or a --type without a handler in
the config, is refused. Every attempt is logged, counted in the metrics and
added to the sluice_stats roll-ups before the pass returns, as under sluice
work.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p.MaxJobs < 1 || maxSeconds < 1 {
				return usagef("--max-jobs and --max-seconds must be at least 1")
			}
			p.MaxDuration = time.Duration(maxSeconds) * time.Second
			c, err := a.workerClient(cmd.Context())
			if err != nil {
				return err
			}
			r, err := c.RunOnce(cmd.Context(), p)
			if err != nil {
				return err
			}
			return writeJSON(a.stdout, r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.Queue, "queue", "", "queue to run (default: every queue the config's types are configured for)")
	f.StringVar(&p.Type, "type", "", "only jobs of this type")
	f.IntVar(&p.MaxJobs, "max-jobs", 20, "jobs to run at most")
	f.IntVar(&maxSeconds, "max-seconds", 45, "deadline of the pass in seconds")
	f.IntVar(&p.Concurrency, "concurrency", 0, "jobs at once (default: the queue's concurrency)")
	return cmd
}
