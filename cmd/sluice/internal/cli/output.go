package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
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
		// What the command changes is recorded in the audit trail as the
		// operating system user's, on this host.
		return run(sluice.WithActor(cmd.Context(), cliActor()), c, args)
	}
}

// cliActor is the audit trail's actor of a CLI command: cli:<os user>,
// from the host it runs on.
func cliActor() sluice.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "uid " + strconv.Itoa(os.Getuid())
	}
	host, _ := os.Hostname()
	return sluice.Actor{Name: "cli:" + name, Source: sluicetype.AuditCLI, Address: host}
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

// terminalSafe writes what it is given with every control character but
// tab and newline spelled out (ESC as \x1b, a C1 control such as CSI as
// \u009b), so that text from a job cannot move the cursor, retitle the
// window or hide itself in the operator's terminal.
type terminalSafe struct {
	w io.Writer
	// c2 is a 0xC2 byte held back from the last write: with the next
	// byte it may be a C1 control in UTF-8.
	c2 bool
}

func (t *terminalSafe) Write(p []byte) (int, error) {
	var b []byte
	if t.c2 {
		b = append(b, 0xC2)
		t.c2 = false
	}
	b = append(b, p...)
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\t' || c == '\n':
			out = append(out, c)
		case c < 0x20 || c == 0x7f:
			out = fmt.Appendf(out, "\\x%02x", c)
		case c == 0xC2 && i+1 == len(b):
			t.c2 = true
		case c == 0xC2 && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, "\\u%04x", b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
