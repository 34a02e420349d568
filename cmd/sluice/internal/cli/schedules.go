package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/scheduler"
)

func (a *app) schedulesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "schedules", Short: "Show the config's schedules"}
	var asJSON bool
	var count int
	list := &cobra.Command{
		Use:   "list",
		Short: "Each schedule with its next run times, last slot, fires and skips",
		Args:  cobra.NoArgs,
		// The config was loaded with the database (app.resolve).
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			scheds, err := setup.Schedules(a.cfg)
			if err != nil {
				return err
			}
			now, err := c.Driver().Now(ctx)
			if err != nil {
				return err
			}
			type row struct {
				Name     string      `json:"name"`
				Cron     string      `json:"cron"`
				Timezone string      `json:"timezone"`
				Type     string      `json:"type"`
				Overlap  string      `json:"overlap"`
				Next     []time.Time `json:"next"`
				LastSlot *time.Time  `json:"last_slot,omitempty"`
				Fires    int64       `json:"fires"`
				Skips    int64       `json:"skips"`
			}
			var rows []row
			for _, s := range scheds {
				r := row{Name: s.Name, Cron: s.Spec.String(), Timezone: s.Spec.Location().String(), Type: s.Type,
					Overlap: cmp.Or(s.Overlap, scheduler.DefaultOverlap)}
				st, err := c.Driver().ScheduleState(ctx, driver.ScheduleStateParams{Name: s.Name})
				if err != nil {
					return err
				}
				for i := 0; i < count; i++ {
					var sl cron.Slot
					if i == 0 {
						sl = scheduler.NextSlot(s.Spec, st, now)
					} else {
						sl = s.Spec.Next(r.Next[i-1])
					}
					r.Next = append(r.Next, sl.At)
				}
				if last, ok := scheduler.LastSlot(st); ok {
					r.LastSlot = &last
				}
				r.Fires, r.Skips = st.Fires, st.Skips
				rows = append(rows, r)
			}
			if asJSON {
				return writeJSONLines(a.stdout, rows)
			}
			return writeTable(a.stdout, "NAME\tCRON\tTIMEZONE\tTYPE\tOVERLAP\tNEXT RUNS (UTC)\tFIRES\tSKIPS", rows, func(w io.Writer, r row) {
				next := ""
				for i, n := range r.Next {
					if i > 0 {
						next += ", "
					}
					next += n.UTC().Format(time.DateTime)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", r.Name, r.Cron, r.Timezone, r.Type, r.Overlap, next, r.Fires, r.Skips)
			})
		}),
	}
	jsonFlag(list, &asJSON, "one JSON object per line")
	list.Flags().IntVar(&count, "next", 3, "how many next run times to show")
	cmd.AddCommand(list)
	return cmd
}
