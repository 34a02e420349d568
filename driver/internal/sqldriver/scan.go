package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// TextTimeLayout is how SQLite stores times: UTC text that sorts like the
// time it names. Plain INSERTs into a SQLite job table must use it too, e.g.
// strftime('%Y-%m-%d %H:%M:%f', 'now').
const TextTimeLayout = "2006-01-02 15:04:05.000"

// Time scans a timestamp whatever the driver hands back: time.Time from
// MySQL and PostgreSQL, text from SQLite. NULL leaves Valid false.
type Time struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		t.Time, t.Valid = time.Time{}, false
		return nil
	case time.Time:
		t.Time, t.Valid = x.UTC(), true
		return nil
	case string:
		return t.parse(x)
	case []byte:
		return t.parse(string(x))
	default:
		return fmt.Errorf("scan time: unsupported type %T", v)
	}
}

func (t *Time) parse(s string) error {
	for _, layout := range []string{TextTimeLayout, "2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
		if p, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			t.Time, t.Valid = p.UTC(), true
			return nil
		}
	}
	return fmt.Errorf("scan time: cannot parse %q", s)
}

// Ptr returns nil for NULL, else a pointer to the time.
func (t Time) Ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

// jobColumns is the standard job column list, each column with its scan
// destination in a JobScanner: the one definition of both the list that
// JobColumnsMarker stands for in the statements and JobScanner.Dest.
var jobColumns = []struct {
	name string
	dest func(s *JobScanner) any
}{
	{"id", func(s *JobScanner) any { return &s.row.ID }},
	{"queue", func(s *JobScanner) any { return &s.row.Queue }},
	{"type", func(s *JobScanner) any { return &s.row.Type }},
	{"business_key", func(s *JobScanner) any { return &s.key }},
	{"dedupe", func(s *JobScanner) any { return &s.row.Dedupe }},
	{"payload", func(s *JobScanner) any { return &s.row.Payload }},
	{"status", func(s *JobScanner) any { return &s.row.Status }},
	{"priority", func(s *JobScanner) any { return &s.row.Priority }},
	{"attempts", func(s *JobScanner) any { return &s.row.Attempts }},
	{"max_attempts", func(s *JobScanner) any { return &s.row.MaxAttempts }},
	{"next_run_at", func(s *JobScanner) any { return &s.nextRunAt }},
	{"locked_by", func(s *JobScanner) any { return &s.lockedBy }},
	{"locked_until", func(s *JobScanner) any { return &s.lockedUntil }},
	{"last_error", func(s *JobScanner) any { return &s.lastError }},
	{"result", func(s *JobScanner) any { return &s.result }},
	{"created_at", func(s *JobScanner) any { return &s.createdAt }},
	{"updated_at", func(s *JobScanner) any { return &s.updatedAt }},
	{"finished_at", func(s *JobScanner) any { return &s.finishedAt }},
	{"traceparent", func(s *JobScanner) any { return &s.traceParent }},
	{"partition_key", func(s *JobScanner) any { return &s.row.Partition }},
	{"deadline", func(s *JobScanner) any { return &s.deadline }},
	{"progress_done", func(s *JobScanner) any { return &s.progressDone }},
	{"progress_total", func(s *JobScanner) any { return &s.progressTotal }},
	{"progress_message", func(s *JobScanner) any { return &s.progressMessage }},
	{"progress_at", func(s *JobScanner) any { return &s.progressAt }},
	{"progress_timeout_us", func(s *JobScanner) any { return &s.progressTimeout }},
}

// JobColumns returns the names of the standard job column list.
func JobColumns() []string {
	out := make([]string, len(jobColumns))
	for i, c := range jobColumns {
		out[i] = c.name
	}
	return out
}

// JobColumnList is JobColumns as SQL, for the statements a driver builds
// in Go.
func JobColumnList() string { return strings.Join(JobColumns(), ", ") }

// JobScanner holds the destinations for the standard job column list.
type JobScanner struct {
	row                                           sluicetype.JobRow
	key, lockedBy, lastError, result, traceParent sql.NullString
	nextRunAt, lockedUntil                        Time
	createdAt, updatedAt, finishedAt, deadline    Time
	progressDone, progressTotal                   sql.NullInt64
	progressMessage                               sql.NullString
	progressAt                                    Time
	progressTimeout                               sql.NullInt64 // microseconds
}

// Dest returns the scan destinations in column order.
func (s *JobScanner) Dest() []any {
	out := make([]any, len(jobColumns))
	for i, c := range jobColumns {
		out[i] = c.dest(s)
	}
	return out
}

// Row returns the scanned job.
func (s *JobScanner) Row() sluicetype.JobRow {
	r := s.row
	r.Payload = append([]byte(nil), r.Payload...)
	r.Key, r.LockedBy, r.LastError, r.Result = s.key.String, s.lockedBy.String, s.lastError.String, s.result.String
	r.TraceParent = s.traceParent.String
	r.NextRunAt, r.CreatedAt, r.UpdatedAt = s.nextRunAt.Time, s.createdAt.Time, s.updatedAt.Time
	r.LockedUntil, r.FinishedAt, r.Deadline = s.lockedUntil.Ptr(), s.finishedAt.Ptr(), s.deadline.Ptr()
	r.ProgressTimeout = time.Duration(s.progressTimeout.Int64) * time.Microsecond
	// Progress writes all four columns at once, so done alone says
	// whether there is any.
	if s.progressDone.Valid {
		r.Progress = &sluicetype.Progress{Done: s.progressDone.Int64, Total: s.progressTotal.Int64,
			Message: s.progressMessage.String, At: s.progressAt.Time}
	}
	return r
}

// QueryJobs runs q on from and reads its rows, the job column list.
func QueryJobs(ctx context.Context, from driver.Querier, q string, args ...any) ([]sluicetype.JobRow, error) {
	rows, err := from.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return ScanJobs(rows)
}

// ScanJobs reads every row of rows with the standard job column list.
func ScanJobs(rows *sql.Rows) ([]sluicetype.JobRow, error) {
	var s JobScanner
	dest := s.Dest()
	return ScanAll(rows, func(r *sql.Rows) (sluicetype.JobRow, error) {
		if err := r.Scan(dest...); err != nil {
			return sluicetype.JobRow{}, fmt.Errorf("scan job: %w", err)
		}
		return s.Row(), nil
	})
}

// ScanID scans a row of one id.
func ScanID(rows *sql.Rows) (int64, error) {
	var id int64
	err := rows.Scan(&id)
	return id, err
}

// IDSet reads rows of one id each into a set.
func IDSet(rows *sql.Rows, n int) (map[int64]bool, error) {
	set := make(map[int64]bool, n)
	err := EachRow(rows, func(r *sql.Rows) error {
		id, err := ScanID(r)
		set[id] = true
		return err
	})
	return set, err
}

// Missing returns the ids of ids that set lacks, in order.
func Missing(ids []int64, set map[int64]bool) []int64 {
	var out []int64
	for _, id := range ids {
		if !set[id] {
			out = append(out, id)
		}
	}
	return out
}

// EachRow calls fn for every row of rows, closes rows and reports the
// iteration's error: the loop each multi-row read would repeat.
func EachRow(rows *sql.Rows, fn func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ScanAll reads every row of rows with scan.
func ScanAll[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	return collect(func(fn func(*sql.Rows) error) error { return EachRow(rows, fn) }, scan)
}

// QueryAll runs q on from and reads every row with scan. Errors are
// wrapped with what, which names the read.
func QueryAll[T any](ctx context.Context, from driver.Querier, what, q string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	return collect(func(fn func(*sql.Rows) error) error { return QueryEach(ctx, from, what, q, args, fn) }, scan)
}

// QueryMap runs q, whose rows are a key and a value, on from and maps
// one to the other.
func QueryMap[K comparable, V any](ctx context.Context, from driver.Querier, what, q string, args []any) (map[K]V, error) {
	out := map[K]V{}
	err := QueryEach(ctx, from, what, q, args, func(rows *sql.Rows) error {
		var k K
		var v V
		err := rows.Scan(&k, &v)
		out[k] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// collect appends what scan reads of each row that each visits.
func collect[T any](each func(func(*sql.Rows) error) error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	var out []T
	err := each(func(r *sql.Rows) error {
		v, err := scan(r)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueryEach runs q on from and calls fn for every row. Errors are
// wrapped with what, which names the read.
func QueryEach(ctx context.Context, from driver.Querier, what, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := from.QueryContext(ctx, q, args...)
	if err == nil {
		err = EachRow(rows, fn)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// NullString maps "" to NULL.
func NullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// PtrString maps nil to NULL.
func PtrString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}
