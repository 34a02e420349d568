package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// The schema's version, the database clock and dropping the tables
// (queries/schema.sql of each dialect).

// Now reads the database clock.
func (b *Base) Now(ctx context.Context) (time.Time, error) {
	var t Time
	if err := b.Read.QueryRowContext(ctx, b.Q.Now).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t.Time, nil
}

// SchemaVersion reads the version row; a missing table is version 0.
func (b *Base) SchemaVersion(ctx context.Context, latest int, missingTable func(error) bool) (int, int, error) {
	var v int
	err := b.Read.QueryRowContext(ctx, b.Q.SchemaVersion).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, latest, nil
	case err != nil && missingTable(err):
		return 0, latest, nil
	case err != nil:
		return 0, latest, fmt.Errorf("read schema version: %w", err)
	}
	return v, latest, nil
}

// DropTables drops every table (and PostgreSQL function) whose name starts
// with prefix. The names come from the catalogue, so tables of later
// migrations and a test's own tables go too, and are matched here rather
// than with LIKE, whose '_' wildcard would match other prefixes as well.
func (b *Base) DropTables(ctx context.Context, p driver.DropTablesParams) error {
	prefix := p.Prefix
	if err := driver.ValidatePrefix(prefix); err != nil {
		return err
	}
	var stmts []string
	err := QueryEach(ctx, b.Write, "list tables", b.Q.DropList, nil, func(rows *sql.Rows) error {
		var stmt, name string
		err := rows.Scan(&stmt, &name)
		if strings.HasPrefix(name, prefix) {
			stmts = append(stmts, stmt)
		}
		return err
	})
	if err != nil {
		return err
	}
	// Tables with a foreign key come first in MySQL's list (DropList):
	// it refuses to drop a table another references.
	for _, stmt := range stmts {
		if _, err := b.Write.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
