package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/buildinfo"
)

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Get()
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				return enc.Encode(bi)
			}
			fmt.Fprintf(a.stdout, "sluice %s %s %s\n", bi, bi.GoVersion, bi.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print version, commit, date, modified, go_version and platform as JSON")
	return cmd
}
