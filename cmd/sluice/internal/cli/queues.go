package cli

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/spf13/cobra"
)

func (a *app) queuesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "queues", Short: "Pause and resume queues"}
	for _, pause := range []bool{true, false} {
		verb := "resume"
		if pause {
			verb = "pause"
		}
		cmd.AddCommand(&cobra.Command{
			Use:   verb + " NAME",
			Short: verb + " a queue on every worker (takes effect within about a second)",
			Args:  cobra.ExactArgs(1),
			RunE: a.withClient(func(ctx context.Context, c *sluice.Client, args []string) error {
				set := c.ResumeQueue
				if pause {
					set = c.PauseQueue
				}
				if err := set(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "queue %s: %sd\n", args[0], verb)
				return nil
			}),
		})
	}
	return cmd
}
