package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// The scaffolding the commands share: what opens the database or the
// client they run on, and how they print, as a table or as --json.

// migrated opens the database and checks that its schema is current, as
// every command but migrate needs it.
func (a *app) migrated(ctx context.Context) (driver.Driver, error) {
	d, err := a.open()
	if err != nil {
		return nil, err
	}
	if _, err := driver.CheckSchema(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// withClient is the RunE of a command that runs on the enqueue-and-admin
// client (app.client): run gets it opened, with the command's context.
func (a *app) withClient(run func(ctx context.Context, c *sluice.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.client(cmd.Context())
		if err != nil {
			return err
		}
		return run(cmd.Context(), c, args)
	}
}

// withDriver is the RunE of a command that runs on the migrated database
// itself (app.migrated) rather than on a client.
func (a *app) withDriver(run func(ctx context.Context, d driver.Driver, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		d, err := a.migrated(cmd.Context())
		if err != nil {
			return err
		}
		return run(cmd.Context(), d, args)
	}
}

// jsonFlag adds a command's --json flag; usage says what it prints.
func jsonFlag(cmd *cobra.Command, v *bool, usage string) {
	cmd.Flags().BoolVar(v, "json", false, usage)
}

// writeJSON writes v as one line of JSON, a command's --json output.
func writeJSON(out io.Writer, v any) error { return json.NewEncoder(out).Encode(v) }

// writeJSONLines writes one line of JSON per item, so that a long list
// can be read line by line.
func writeJSONLines[T any](out io.Writer, items []T) error {
	enc := json.NewEncoder(out)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// writeTable prints the header and a row per item as aligned columns.
func writeTable[T any](out io.Writer, header string, items []T, row func(w io.Writer, item T)) error {
	w := newTable(out)
	fmt.Fprintln(w, header)
	for _, it := range items {
		row(w, it)
	}
	return w.Flush()
}
