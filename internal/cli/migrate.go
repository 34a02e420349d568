package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the schema (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := a.open()
			if err != nil {
				return err
			}
			before, _, err := d.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			v, err := d.Migrate(cmd.Context())
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if v == before {
				fmt.Fprintf(a.stdout, "schema version %d (already up to date)\n", v)
			} else {
				fmt.Fprintf(a.stdout, "schema version %d (upgraded from %d)\n", v, before)
			}
			return nil
		},
	}
}
