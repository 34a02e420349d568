package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

func (a *app) circuitCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "circuit", Short: "Show, open and close the job types' circuit breakers"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Every circuit breaker that has a row: its state, failure count, openings and cool-down end",
		Args:  cobra.NoArgs,
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			cs, err := c.Circuits(ctx)
			if err != nil {
				return err
			}
			if cs == nil {
				cs = []sluicetype.Circuit{}
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"circuits": cs})
			}
			if len(cs) == 0 {
				fmt.Fprintln(a.stdout, "no circuit has counted a failure")
				return nil
			}
			return writeCircuits(a.stdout, cs)
		}),
	}
	jsonFlag(list, &asJSON, "JSON output")
	cmd.AddCommand(list)
	for _, open := range []bool{true, false} {
		verb, short := "close", "close a type's circuit on every worker and clear its failure count"
		if open {
			verb, short = "open", "open a type's circuit on every worker until it is closed by hand: its jobs wait, uncharged"
		}
		cmd.AddCommand(&cobra.Command{
			Use:   verb + " TYPE",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: a.withClient(func(ctx context.Context, c *sluice.Client, args []string) error {
				set := c.CloseCircuit
				if open {
					set = c.OpenCircuit
				}
				st, err := set(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "circuit %s: %s\n", args[0], st.State)
				return nil
			}),
		})
	}
	return cmd
}
