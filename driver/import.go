package driver

import (
	"context"
	"database/sql"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// ImportColumns are the columns of a polling_jobs table that `sluice
// import` reads, in the order ScanImport selects them: the shape of the
// job table PHP shops run today (docs/php.md, "Moving from polling_jobs").
// A table whose columns have other names maps them
// (ScanImportParams.Columns).
var ImportColumns = []string{"id", "business_key", "type", "payload", "status", "attempts", "max_attempts",
	"next_run_at", "last_error", "created_at", "updated_at", "finished_at", "locked_until"}

// ImportTimeColumns are the time columns of ImportColumns, in the order of
// ImportSourceRow.Times.
var ImportTimeColumns = []string{"next_run_at", "created_at", "updated_at", "finished_at", "locked_until"}

// Importer is implemented by a driver that can copy another job table of
// its own database into sluice_jobs (`sluice import`; the MySQL driver's
// today). The caller owns the rules (the statuses' mapping, the zones, the
// enqueue rules); the driver reads the table and writes the jobs.
type Importer interface {
	// ImportSourceColumns returns the columns of table, lower case, with
	// their data types, lower case ("datetime", "timestamp", ...); none
	// when there is no such table.
	ImportSourceColumns(ctx context.Context, table string) (map[string]string, error)
	// ScanImport reads p.Table in id order and calls fn with each row; an
	// error from fn ends the scan with it.
	ScanImport(ctx context.Context, p ScanImportParams, fn func(ImportSourceRow) error) error
	// Import copies p.Rows into sluice_jobs in one transaction, each with
	// its record in sluice_imports, so that running an import again copies
	// only the rows it has not. A row whose key a sluice job holds is not
	// copied: that job stands.
	Import(ctx context.Context, p ImportParams) (ImportResult, error)
}

// ScanImportParams says which table ScanImport reads, and how.
type ScanImportParams struct {
	Table string
	// Columns maps each of ImportColumns to the table's own column, or to
	// "" where the table has none (read as NULL).
	Columns map[string]string
	// MaxPayload is the longest payload read: a longer one is not
	// transferred (ImportSourceRow.Payload nil, PayloadSize set).
	MaxPayload int
}

// ImportSourceRow is one row of the table as it holds it, nothing
// converted.
type ImportSourceRow struct {
	ID          int64
	Key         sql.NullString
	Type        string
	Payload     []byte
	PayloadSize sql.NullInt64 // NULL when the payload is
	Status      sql.NullString
	Attempts    sql.NullInt64
	MaxAttempts sql.NullInt64
	LastError   sql.NullString
	// Times are ImportTimeColumns' values as text, "2006-01-02
	// 15:04:05.000000": a DATETIME's wall time as stored, a TIMESTAMP's
	// instant in UTC.
	Times [5]sql.NullString
	// Problem is set when the database cannot hand a value over as it is,
	// such as a payload larger than MySQL's max_allowed_packet: the row
	// cannot be copied.
	Problem error
}

// ImportRow is one row of another job table that Import copies into
// sluice_jobs as it is: its status, attempts, error and times kept.
type ImportRow struct {
	SourceID    int64 // the row's id in its table: with the table, its key in sluice_imports
	Type        string
	Key         sql.NullString
	Payload     string
	Status      sluicetype.Status
	Attempts    int
	MaxAttempts int // 0: the type's setting
	NextRunAt   time.Time
	LastError   sql.NullString
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  sql.NullTime
	// Queue and Dedupe are the type's settings; "" leaves them to the
	// database's defaults for the type, as for any plain INSERT.
	Queue, Dedupe string
}

// ImportParams is one batch of rows of the table Source to copy.
type ImportParams struct {
	Source string
	Rows   []ImportRow
}

// ImportResult counts a batch's rows: copied, found in sluice_imports
// from an earlier run, and not copied because a sluice job already holds
// their business key (that job stands; the row is recorded as imported to
// it).
type ImportResult struct {
	Copied, Before, KeyTaken int
}
