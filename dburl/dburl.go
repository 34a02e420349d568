// Package dburl opens a sluice driver from a database URL:
// sqlite:PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB.
//
// A postgres:// URL that goes through a transaction pooler such as
// PgBouncer says so with ?pooler=transaction (see postgres.PoolerParam);
// Options.ListenURL then gives a direct URL for wake-ups.
package dburl

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	neturl "net/url"
	"os"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/driver/sqlite"
)

// Default is the database used when none is configured.
const Default = "sqlite:sluice.db"

// ErrBadScheme marks a URL whose scheme sluice does not know; the CLI exits 2 on it.
var ErrBadScheme = errors.New("unknown database URL scheme")

// ErrNoDatabase marks a SQLite file that does not exist, opened with
// Options.MustExist.
var ErrNoDatabase = errors.New("no database")

// Options apply to whichever driver the URL selects.
type Options struct {
	Prefix string // table prefix; default "sluice_"
	// MustExist refuses to create a SQLite file that does not exist (the
	// error wraps ErrNoDatabase). SQLite creates a missing file on open, so
	// without it a mistyped path, or a setting that was never read, starts
	// a new empty database instead of failing. In-memory databases and
	// server databases are unaffected.
	MustExist bool
	// ListenURL is a direct postgres:// URL to the same database for the
	// LISTEN connection that wakes idle workers, for a URL with
	// ?pooler=transaction, through which notifications cannot pass.
	// Without it, idle workers behind a pooler probe for jobs. PostgreSQL
	// only.
	ListenURL string
}

// Scheme returns the driver name for a URL: "sqlite", "mysql" or "postgres".
func Scheme(url string) (string, error) {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return "sqlite", nil
	case strings.HasPrefix(url, "mysql://"):
		return "mysql", nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres", nil
	}
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || url == "" {
		scheme = url
	}
	return "", fmt.Errorf("%w %q: use sqlite:PATH, mysql://USER:PASS@HOST:PORT/DB or postgres://USER:PASS@HOST:PORT/DB", ErrBadScheme, scheme)
}

// Open opens the driver for url. It does not migrate.
func Open(url string, opts Options) (driver.Driver, error) {
	scheme, err := Scheme(url)
	if err != nil {
		return nil, err
	}
	if opts.ListenURL != "" {
		if scheme != "postgres" {
			return nil, fmt.Errorf("a listen URL is for PostgreSQL databases only, not %s", scheme)
		}
		if s, err := Scheme(opts.ListenURL); err != nil || s != "postgres" {
			return nil, fmt.Errorf("listen URL %s: want postgres://USER:PASS@HOST:PORT/DB", Redact(opts.ListenURL))
		}
	}
	switch scheme {
	case "sqlite":
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if opts.MustExist {
			// An empty path is left to sqlite.Open, which explains it.
			file, _, _ := strings.Cut(path, "?")
			if file != "" && file != ":memory:" {
				if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("%w at %s", ErrNoDatabase, url)
				}
			}
		}
		return sqlite.Open(path, sqlite.Options{Prefix: opts.Prefix})
	case "mysql":
		d, err := mysql.Open(url, mysql.Options{Prefix: opts.Prefix})
		if errors.Is(err, gomysql.ErrInvalidConn) {
			// The driver's own word for a server that closed the connection
			// mid-handshake; its detail went to mysqlLog.
			return nil, fmt.Errorf("%w (the server closed the connection during the MySQL handshake: is this host and port a MySQL server, and does it accept this client?)", err)
		}
		return d, err
	default:
		return postgres.Open(url, postgres.Options{Prefix: opts.Prefix, ListenURL: opts.ListenURL})
	}
}

// Explain adds what to do to an error whose fix is in the database URL:
// a PostgreSQL "prepared statement ... already exists" (SQLSTATE 42P05),
// which pgx's statement cache meets behind a transaction pooler such as
// PgBouncer when the URL does not say ?pooler=transaction. Other errors
// are returned as they are.
func Explain(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P05" {
		return fmt.Errorf("%w: the database URL leads to a transaction pooler such as PgBouncer; add ?pooler=transaction to it (docs/scale.md \"PgBouncer (transaction pooling)\")", err)
	}
	return err
}

// mysqlLog sends what go-sql-driver/mysql prints (a line such as
// "packets.go:58 unexpected EOF" on stderr, beside the error it returns
// anyway) to slog's default logger at debug level.
type mysqlLog struct{}

func (mysqlLog) Print(v ...any) { slog.Debug("mysql driver: " + fmt.Sprint(v...)) }

func init() { gomysql.SetLogger(mysqlLog{}) }

// Redact hides the password in a URL for messages and logs: the one in
// the user info, and a password or sslpassword parameter, which pgx reads
// from a postgres:// URL's query.
func Redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	// The user info ends at the authority's last '@', as net/url (and so
	// the MySQL driver) reads it: a password may hold an unescaped '@'.
	// pgx splits at the first one instead; then what it takes for the
	// host's start is hidden too, which hides more, never less.
	authority := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
			rest = user + ":***" + rest[at:]
		}
	}
	if !hasQuery {
		return scheme + "://" + rest
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		raw, _, _ := strings.Cut(p, "=")
		if k, err := neturl.QueryUnescape(raw); err == nil && (strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")) {
			params[i] = raw + "=***"
		}
	}
	return scheme + "://" + rest + "?" + strings.Join(params, "&")
}
