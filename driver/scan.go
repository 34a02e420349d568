package driver

import (
	"database/sql"
	"fmt"
	"time"

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

// JobScanner holds the destinations for the standard job column list:
// id, queue, type, business_key, dedupe, payload, status, priority, attempts,
// max_attempts, next_run_at, locked_by, locked_until, last_error, result,
// created_at, updated_at, finished_at, traceparent, partition_key.
type JobScanner struct {
	row                                           sluicetype.JobRow
	key, lockedBy, lastError, result, traceParent sql.NullString
	nextRunAt, lockedUntil                        Time
	createdAt, updatedAt, finishedAt              Time
}

// Dest returns the scan destinations in column order.
func (s *JobScanner) Dest() []any {
	r := &s.row
	return []any{&r.ID, &r.Queue, &r.Type, &s.key, &r.Dedupe, &r.Payload, &r.Status, &r.Priority,
		&r.Attempts, &r.MaxAttempts, &s.nextRunAt, &s.lockedBy, &s.lockedUntil, &s.lastError, &s.result,
		&s.createdAt, &s.updatedAt, &s.finishedAt, &s.traceParent, &r.Partition}
}

// Row returns the scanned job.
func (s *JobScanner) Row() sluicetype.JobRow {
	r := s.row
	r.Payload = append([]byte(nil), r.Payload...)
	r.Key, r.LockedBy, r.LastError, r.Result = s.key.String, s.lockedBy.String, s.lastError.String, s.result.String
	r.TraceParent = s.traceParent.String
	r.NextRunAt, r.CreatedAt, r.UpdatedAt = s.nextRunAt.Time, s.createdAt.Time, s.updatedAt.Time
	r.LockedUntil, r.FinishedAt = s.lockedUntil.Ptr(), s.finishedAt.Ptr()
	return r
}

// ScanJobs reads every row of rows with the standard job column list.
func ScanJobs(rows *sql.Rows) ([]sluicetype.JobRow, error) {
	defer rows.Close()
	var out []sluicetype.JobRow
	var s JobScanner
	dest := s.Dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		out = append(out, s.Row())
	}
	return out, rows.Err()
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
