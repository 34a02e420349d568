package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) workCommand() *cobra.Command {
	var shutdown time.Duration
	cmd := &cobra.Command{
		Use:   "work",
		Short: "Run workers, the scheduler and maintenance from the config, with no HTTP",
		Long: `Run the workers of every configured queue, the schedules and the maintenance
leader until SIGINT or SIGTERM. On a signal, sluice stops claiming, gives
running jobs --shutdown-timeout to finish, then cancels the rest and returns
them to pending without charging the attempt (a job interrupted so three
times in a row is charged the fourth, so that it reaches a final state).
Each attempt is logged on stderr: successes at info, failures at warn
(--log-level warn quiets the successes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.workerClient(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.Start(context.WithoutCancel(cmd.Context())); err != nil {
				return err
			}
			<-cmd.Context().Done()
			a.log.Info("signal received; shutting down", "deadline", shutdown)
			ctx, cancel := context.WithTimeout(context.Background(), shutdown)
			defer cancel()
			c.Stop(ctx)
			return nil
		},
	}
	cmd.Flags().DurationVar(&shutdown, "shutdown-timeout", 30*time.Second, "how long running jobs get to finish on SIGTERM")
	return cmd
}
