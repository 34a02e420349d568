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
	"regexp"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
)

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

	dbFlag     string // --db as given
	listenFlag string // --listen-db as given
	configFlag string // --config as given
	logFormat  string
	logLevel   string
	prefix     string

	log *slog.Logger

	// Set by resolve (through loadConfig) before any command that uses the
	// database runs.
	cfg     *config.File // the config file's settings; empty without a file
	cfgPath string       // the config file read; "" for none
	dbURL   string       // the database in force; "" until resolved
	dbFrom  string       // where dbURL came from, for messages
	// listenURL is the direct URL for wake-ups (--listen-db, $SLUICE_LISTEN_DB
	// or listen_db:), taken from the same place as dbURL; "" for none.
	listenURL string

	drv   driver.Driver
	dests map[string]driver.Driver // copy sinks' destinations, by URL
	// tracing is the OTLP exporting provider, set by workerClient when the
	// config has a tracing endpoint.
	tracing *sdktrace.TracerProvider
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
	a.stopTracing()
	if a.drv != nil {
		a.drv.Close()
	}
	for _, d := range a.dests {
		d.Close()
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
	fmt.Fprintln(stderr, "sluice: "+oneLine(dburl.Explain(err).Error()))
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

// newTable is the layout of every table the CLI prints: columns two
// spaces apart, tab stops of 4. Its cells hold what API clients and
// remote receivers wrote (keys, errors), so control characters reach the
// terminal escaped (terminalSafe).
func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(&terminalSafe{w: out}, 2, 4, 2, ' ', 0)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Durable background jobs on the SQL database you already have",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := a.applyGlobalFlags(); err != nil {
				return err
			}
			if usesDatabase(cmd) {
				return a.resolve()
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{flagMessage(err.Error())} })
	f := root.PersistentFlags()
	f.StringVar(&a.dbFlag, "db", "", "database URL (env SLUICE_DB; else the config's db:; default "+dburl.Default+")")
	f.StringVar(&a.listenFlag, "listen-db", "", "direct postgres:// URL for wake-ups when the database URL says ?pooler=transaction (env SLUICE_LISTEN_DB; else the config's listen_db:); goes with --db")
	f.StringVar(&a.configFlag, "config", "", "config file (env SLUICE_CONFIG; ./sluice.yaml if it exists)")
	f.StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	// Every command on this list gets the config file and the database
	// resolved before it runs, in one place, so that none of them can read
	// a different database than the others.
	for _, c := range []*cobra.Command{a.migrateCommand(), a.enqueueCommand(), a.jobsCommand(), a.statsCommand(),
		a.queuesCommand(), a.circuitCommand(), a.workCommand(), a.serveCommand(), a.runCommand(), a.schedulesCommand(), a.benchCommand(),
		a.batchCommand(), a.importCommand(), a.auditCommand()} {
		c.Annotations = map[string]string{annotationDatabase: "yes"}
		root.AddCommand(c)
	}
	// These never read the config file: version and token work anywhere, and lock
	// has its own --backend, so an unrelated broken sluice.yaml in the
	// directory of a cron job must not stop it. Cobra's help and
	// completion commands are left out the same way.
	root.AddCommand(a.versionCommand(), a.tokenCommand(), a.lockCommand())
	return root
}

// strconvError is the part of a flag error that pflag takes verbatim from
// strconv ("strconv.ParseInt: parsing \"abc\": invalid syntax").
var strconvError = regexp.MustCompile(`strconv\.Parse(Int|Uint|Float|Bool): parsing "[^"]*": (invalid syntax|value out of range)`)

// flagMessage says in words what a flag's value should be, in place of
// strconv's message.
func flagMessage(msg string) string {
	return strconvError.ReplaceAllStringFunc(msg, func(m string) string {
		g := strconvError.FindStringSubmatch(m)
		want := map[string]string{"Int": "an integer", "Uint": "a whole number, 0 or more", "Float": "a number", "Bool": "true or false"}[g[1]]
		if g[2] == "value out of range" {
			return "out of range for " + want
		}
		return "want " + want
	})
}

// annotationDatabase marks a top-level command that uses the database.
const annotationDatabase = "sluice/database"

// usesDatabase reports whether cmd, or the top-level command it belongs
// to, uses the database.
func usesDatabase(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[annotationDatabase] != "" {
			return true
		}
	}
	return false
}

// applyGlobalFlags applies the global flags and environment.
func (a *app) applyGlobalFlags() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	// Every logged error, from any part of sluice, says what to do when
	// its fix is in the database URL (dburl.Explain).
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, at slog.Attr) slog.Attr {
		if err, ok := at.Value.Any().(error); ok {
			at.Value = slog.AnyValue(dburl.Explain(err))
		}
		return at
	}}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usagef("--log-format %q: want text or json", a.logFormat)
	}
	// SLUICE_PREFIX keeps tests' and benchmarks' tables apart; it is not
	// meant for everyday use, so it has no flag.
	a.prefix = os.Getenv("SLUICE_PREFIX")
	return nil
}

// resolve loads the config file and picks the database, with one
// precedence for every command: --db, then $SLUICE_DB, then the config
// file's db:, then dburl.Default. A broken config file fails the command
// even when --db is given, so that a mistake in it never goes unnoticed.
func (a *app) resolve() error {
	f, err := a.loadConfig()
	if err != nil {
		return err
	}
	// The listen URL is read only from where the database URL came from,
	// and is set aside with it: taken from elsewhere it could name another
	// database than the one in force. A --listen-db that cannot apply is
	// an error rather than ignored, since it was given for this command.
	listen := []struct{ url, from string }{
		{a.listenFlag, "--listen-db"}, {os.Getenv("SLUICE_LISTEN_DB"), "SLUICE_LISTEN_DB"}, {f.ListenDB, "listen_db: in " + a.cfgPath},
	}
	var pick int
	switch {
	case a.dbFlag != "":
		a.dbURL, a.dbFrom, pick = a.dbFlag, "--db", 0
	case os.Getenv("SLUICE_DB") != "":
		a.dbURL, a.dbFrom, pick = os.Getenv("SLUICE_DB"), "SLUICE_DB", 1
	case f.DB != "":
		a.dbURL, a.dbFrom, pick = f.DB, "db: in "+a.cfgPath, 2
	default:
		a.dbURL, a.dbFrom, pick = dburl.Default, "the default", -1
	}
	if _, err := dburl.Scheme(a.dbURL); err != nil {
		return fmt.Errorf("%s: %w", a.dbFrom, err)
	}
	for i, l := range listen {
		switch {
		case i == pick:
			a.listenURL = l.url
		case l.url != "" && i == 0:
			return usagef("%s is set but the database comes from %s: give the listen URL in the same place as the database URL", l.from, a.dbFrom)
		}
	}
	if a.listenURL != "" {
		if s, _ := dburl.Scheme(a.dbURL); s != "postgres" {
			return usagef("%s: a listen URL is for a postgres:// database, and the database from %s is %s", listen[pick].from, a.dbFrom, s)
		}
	}
	a.log.Debug("database", "url", dburl.Redact(a.dbURL), "from", a.dbFrom, "prefix", a.prefix)
	return nil
}

// url is the database URL in force.
func (a *app) url() string { return a.dbURL }

// open opens the database without checking the schema. A SQLite file must
// already exist: only migrate creates one (see openOrCreate), so that a
// command reading the wrong database fails instead of starting a new one.
func (a *app) open() (driver.Driver, error) {
	return a.openDB(false)
}

// openOrCreate is open for migrate, which may create a SQLite file.
func (a *app) openOrCreate() (driver.Driver, error) {
	return a.openDB(true)
}

func (a *app) openDB(create bool) (driver.Driver, error) {
	if a.drv != nil {
		return a.drv, nil
	}
	if a.dbURL == "" {
		// A command missing from rootCommand's database list.
		return nil, errors.New("internal error: the database was opened before it was resolved")
	}
	u := dburl.Redact(a.dbURL)
	d, err := dburl.Open(a.dbURL, dburl.Options{Prefix: a.prefix, MustExist: !create, ListenURL: a.listenURL})
	if errors.Is(err, dburl.ErrNoDatabase) {
		return nil, fmt.Errorf("no database at %s (from %s): run `sluice migrate` first", u, a.dbFrom)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %s (from %s): %w", u, a.dbFrom, err)
	}
	a.drv = d
	return d, nil
}

// client opens the database, checks that its schema is current and
// returns an enqueue-and-admin client. It knows the config file's types, so
// that an enqueue takes a type's queue, attempts and dedupe exactly as the
// API of `sluice serve` does; it runs no workers.
func (a *app) client(ctx context.Context) (*sluice.Client, error) {
	d, err := a.migrated(ctx)
	if err != nil {
		return nil, err
	}
	types, err := setup.Types(a.cfg)
	if err != nil {
		return nil, err
	}
	// The queues too, so that an admin command knows the config's queues
	// (sluice queues pause refuses one that nothing knows).
	return sluice.NewClient(sluice.Config{Driver: d, Logger: a.log, Types: types, Queues: setup.Queues(a.cfg), DisableMaintenance: true})
}
