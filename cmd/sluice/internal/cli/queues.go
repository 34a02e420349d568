package cli

import (
	"fmt"

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
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := a.client(cmd.Context())
				if err != nil {
					return err
				}
				if pause {
					err = c.PauseQueue(cmd.Context(), args[0])
				} else {
					err = c.ResumeQueue(cmd.Context(), args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "queue %s: %sd\n", args[0], verb)
				return nil
			},
		})
	}
	return cmd
}
