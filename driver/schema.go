package driver

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/sluicetype"
)

// CheckSchema returns the schema version of d's database and nil when it is
// exactly the version this binary was built for. Every entry point that uses
// a database without migrating it (Client.Start, the CLI, /readyz) asks here,
// so they refuse the same databases with the same words. The error matches
// ErrSchemaMissing (absent or older: migrate) or ErrSchemaTooNew (a newer
// binary migrated it: upgrade) under errors.Is; any other error is the
// database not answering.
func CheckSchema(ctx context.Context, d Driver) (int, error) {
	cur, latest, err := d.SchemaVersion(ctx)
	switch {
	case err != nil:
		return 0, err
	case cur < latest:
		return cur, &schemaError{fmt.Sprintf("database schema version %d, want %d: run `sluice migrate` first", cur, latest), sluicetype.ErrSchemaMissing}
	case cur > latest:
		return cur, &schemaError{fmt.Sprintf("database schema version %d is newer than this binary (%d): upgrade sluice", cur, latest), sluicetype.ErrSchemaTooNew}
	}
	return cur, nil
}

// schemaError carries its own message, which says what to do, so that the
// sentinel's shorter text is not repeated after it.
type schemaError struct {
	msg      string
	sentinel error
}

func (e *schemaError) Error() string { return e.msg }
func (e *schemaError) Unwrap() error { return e.sentinel }
