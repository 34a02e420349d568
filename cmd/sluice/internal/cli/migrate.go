package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/dburl"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the schema (idempotent); record the config's type settings for SQL enqueues",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := a.openOrCreate()
			if err != nil {
				return err
			}
			// The version before is the one Migrate read under its lock:
			// of several concurrent runs, one upgrades and the others
			// find the schema current.
			m, err := d.Migrate(cmd.Context())
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			// Naming the database shows at once when it is not the one meant.
			db := dburl.Redact(a.url())
			if m.To == m.From {
				fmt.Fprintf(a.stdout, "%s: schema version %d (already up to date)\n", db, m.To)
			} else {
				fmt.Fprintf(a.stdout, "%s: schema version %d (upgraded from %d)\n", db, m.To, m.From)
			}
			// The config's types go to sluice_types, where plain-SQL
			// enqueues find their queue, max_attempts and dedupe.
			types, err := setup.Types(a.cfg)
			if err != nil {
				return err
			}
			c, err := sluice.NewClient(sluice.Config{Driver: d, Logger: a.log, Types: types})
			if err != nil {
				return err
			}
			n, err := c.SyncTypes(cmd.Context())
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if n > 0 {
				fmt.Fprintf(a.stdout, "%s: job type settings written from %s: %d\n", db, a.cfgPath, n)
			}
			return nil
		},
	}
}
