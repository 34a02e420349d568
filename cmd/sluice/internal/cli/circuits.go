package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/sluicetype"
)

func (a *app) circuitCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "circuit", Short: "Show, open and close the job types' circuit breakers"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Every circuit breaker that has a row: its state, failure count, openings and cool-down end",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			cs, err := c.Circuits(cmd.Context())
			if err != nil {
				return err
			}
			if cs == nil {
				cs = []sluicetype.Circuit{}
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"circuits": cs})
			}
			if len(cs) == 0 {
				fmt.Fprintln(a.stdout, "no circuit has counted a failure")
				return nil
			}
			return writeCircuits(a.stdout, cs)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "JSON output")
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
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := a.client(cmd.Context())
				if err != nil {
					return err
				}
				var st sluicetype.Circuit
				if open {
					st, err = c.OpenCircuit(cmd.Context(), args[0])
				} else {
					st, err = c.CloseCircuit(cmd.Context(), args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "circuit %s: %s\n", args[0], st.State)
				return nil
			},
		})
	}
	return cmd
}
