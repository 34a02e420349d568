package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/dur"
	"github.com/sluicehq/sluice/sluicetype"
)

func (a *app) auditCommand() *cobra.Command {
	var p sluice.AuditParams
	var since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the audit trail of operator actions, newest first; page with --before-id",
		Args:  cobra.NoArgs,
		// Before the client opens: a bad flag exits 2 without touching
		// the database.
		PreRunE: func(*cobra.Command, []string) error {
			if p.Limit < 1 || p.Limit > sluice.MaxAuditList {
				return usagef("--limit %d: want 1 to %d", p.Limit, sluice.MaxAuditList)
			}
			if since != "" {
				d, err := dur.Parse(since)
				if err != nil || d <= 0 {
					return usagef("--since %q: want a positive duration such as 24h or 7d", since)
				}
				p.Within = d
			}
			return nil
		},
		RunE: a.withClient(func(ctx context.Context, c *sluice.Client, _ []string) error {
			es, err := c.Audit(ctx, p)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONLines(a.stdout, es)
			}
			// writeTable spells out control characters: a token name or a
			// queue name is text an API client chose.
			if err := writeTable(a.stdout, "ID\tAT\tACTOR\tSOURCE\tADDRESS\tACTION\tTARGET\tAFFECTED", es,
				func(w io.Writer, e sluicetype.AuditEntry) {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", e.ID, e.At.UTC().Format(time.RFC3339), e.Actor, e.Source,
						e.Address, e.Action, firstLine(e.Target, 80), e.Affected)
				}); err != nil {
				return err
			}
			if len(es) == p.Limit {
				fmt.Fprintf(a.stderr, "more: --before-id %d\n", es[len(es)-1].ID)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "only entries of this last while, e.g. 24h or 7d")
	f.StringVar(&p.Actor, "actor", "", "only this actor: a token's name, or cli:<user>")
	f.StringVar(&p.Action, "action", "", "only this action, e.g. job.retry or queue.pause")
	f.IntVar(&p.Limit, "limit", 50, fmt.Sprintf("rows per page (at most %d)", sluice.MaxAuditList))
	f.Int64Var(&p.BeforeID, "before-id", 0, "entries older than this id (the last id of the previous page)")
	jsonFlag(cmd, &asJSON, "one JSON object per line")
	return cmd
}
