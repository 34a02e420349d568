package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/driver"
)

func (a *app) statsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per-queue counts of pending, processing and failed jobs, and finished jobs in the last hour and day",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd.Context())
			if err != nil {
				return err
			}
			st, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"queues": st})
			}
			w := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "QUEUE\tPENDING\tPROCESSING\tFAILED\tOLDEST PENDING\tPAUSED\tDONE 1H\tFAILED 1H\tDONE 24H\tFAILED 24H")
			for _, s := range st {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%v\t%d\t%d\t%d\t%d\n", s.Queue, s.Pending, s.Processing, s.Failed,
					(time.Duration(s.OldestPendingAge * float64(time.Second))).Round(time.Second), s.Paused,
					s.FinishedHour[string(driver.OutcomeSuccess)], s.FinishedHour[string(driver.OutcomeFailed)], s.FinishedDay[string(driver.OutcomeSuccess)], s.FinishedDay[string(driver.OutcomeFailed)])
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	return cmd
}
