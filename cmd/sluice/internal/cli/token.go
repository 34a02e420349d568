package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/authtoken"
)

// tokenCommand makes API tokens. It reads no config, so that it works
// before there is one.
func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make API tokens",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "new",
		Short: "Print a new random token for auth.tokens (256 bits, base64url)",
		Long: `Print a new random token (32 bytes from the system's secure random source,
base64url without padding) for auth.tokens. Keep it in the environment:

  export SLUICE_TOKEN=$(sluice token new)

and write tokens: ["${SLUICE_TOKEN}"] in sluice.yaml.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, authtoken.New())
			return err
		},
	})
	return cmd
}
