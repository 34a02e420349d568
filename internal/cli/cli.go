// Package cli is the sluice command line, one file per subcommand.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// usageError is bad usage or bad input: exit 2, nothing written.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// app carries the global flags and what they open.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	dbURL      string
	configPath string
	logFormat  string
	logLevel   string
	prefix     string

	log  *slog.Logger
	drv  driver.Driver
	file *config.File // the loaded config, once loadConfig has run
}

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if a.drv != nil {
		a.drv.Close()
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "sluice: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "sluice: "+oneLine(err.Error()))
	return exitCode(err)
}

// exitError carries an exit code chosen by a subcommand (lock, run).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitCode(err error) int {
	var ue *usageError
	var ie *sluice.InputError
	switch {
	case errors.As(err, &ue), errors.As(err, &ie), errors.Is(err, dburl.ErrBadScheme):
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"),
		strings.HasPrefix(err.Error(), "unknown shorthand flag"), strings.Contains(err.Error(), "flag needs an argument"),
		strings.HasPrefix(err.Error(), "invalid argument"), strings.Contains(err.Error(), "arg(s)"):
		return exitUsage
	}
	return exitRuntime
}

// oneLine keeps error output to one line, as scripts and cron mail expect.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Durable background jobs on the SQL database you already have",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.setup()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	f := root.PersistentFlags()
	f.StringVar(&a.dbURL, "db", "", "database URL (env SLUICE_DB; default "+dburl.Default+")")
	f.StringVar(&a.configPath, "config", "", "config file (env SLUICE_CONFIG; ./sluice.yaml if it exists)")
	f.StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(a.migrateCommand(), a.enqueueCommand(), a.jobsCommand(), a.statsCommand(),
		a.queuesCommand(), a.versionCommand(), a.workCommand(), a.serveCommand(), a.runCommand(), a.schedulesCommand(), a.benchCommand(), a.lockCommand(), a.batchCommand())
	return root
}

// setup applies the global flags and environment.
func (a *app) setup() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usagef("--log-format %q: want text or json", a.logFormat)
	}
	if a.dbURL == "" {
		a.dbURL = os.Getenv("SLUICE_DB")
	}
	if a.configPath == "" {
		a.configPath = os.Getenv("SLUICE_CONFIG")
	}
	// SLUICE_PREFIX keeps tests' and benchmarks' tables apart; it is not
	// meant for everyday use, so it has no flag.
	a.prefix = os.Getenv("SLUICE_PREFIX")
	return nil
}

// url is the database URL in force.
func (a *app) url() string {
	if a.dbURL != "" {
		return a.dbURL
	}
	return dburl.Default
}

// open opens the database without checking the schema (for migrate).
func (a *app) open() (driver.Driver, error) {
	if a.drv != nil {
		return a.drv, nil
	}
	// Every command honours the config's db:, not only those that run
	// workers: `sluice --config x.yaml enqueue` must reach x.yaml's database.
	if _, err := a.loadConfig(); err != nil {
		return nil, err
	}
	u := a.url()
	if _, err := dburl.Scheme(u); err != nil {
		return nil, err
	}
	d, err := dburl.Open(u, dburl.Options{Prefix: a.prefix})
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w (check --db or SLUICE_DB)", dburl.Redact(u), err)
	}
	a.drv = d
	return d, nil
}

// client opens the database, checks that its schema is current and
// returns an enqueue-and-admin client.
func (a *app) client(ctx context.Context) (*sluice.Client, error) {
	d, err := a.open()
	if err != nil {
		return nil, err
	}
	if err := checkSchema(ctx, d); err != nil {
		return nil, err
	}
	return sluice.NewClient(sluice.Config{Driver: d, Logger: a.log})
}

func checkSchema(ctx context.Context, d driver.Driver) error {
	cur, latest, err := d.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case cur < latest:
		return fmt.Errorf("database schema version %d, this binary needs %d: run `sluice migrate` first", cur, latest)
	case cur > latest:
		return fmt.Errorf("database schema version %d is newer than this binary (%d): upgrade sluice", cur, latest)
	}
	return nil
}
