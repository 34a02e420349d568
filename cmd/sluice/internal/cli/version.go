package cli

import (
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
				return writeJSON(a.stdout, bi)
			}
			fmt.Fprintf(a.stdout, "sluice %s %s %s\n", bi, bi.GoVersion, bi.Platform)
			return nil
		},
	}
	jsonFlag(cmd, &asJSON, "print version, commit, date, modified, go_version and platform as JSON")
	return cmd
}
