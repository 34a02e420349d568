package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/setup"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// defaultImportStatuses maps polling_jobs statuses to sluice's: a job the
// old loop was running goes back to pending, its interrupted run not
// charged as an attempt.
var defaultImportStatuses = map[string]sluicetype.Status{
	"pending": sluicetype.StatusPending, "processing": sluicetype.StatusPending,
	"success": sluicetype.StatusSuccess, "failed": sluicetype.StatusFailed, "cancelled": sluicetype.StatusCancelled,
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// maxImportError is the limit on last_error of docs/job-table.md "Columns".
const maxImportError = 4 << 10

type importOptions struct {
	table    string
	columns  []string
	statuses []string
	zone     string
	dryRun   bool
	batch    int
	// ignoreLocks copies a row the old loop still holds (its locked_until
	// in the future) as runnable, though the old worker may be running it.
	ignoreLocks bool
}

func (a *app) importCommand() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Copy jobs from a polling_jobs table in the same database into sluice_jobs (MySQL/MariaDB; safe to run again)",
		Long: `Copies the rows of a "polling jobs" table (default polling_jobs: id, business_key,
type, payload, status, attempts, max_attempts, next_run_at, last_error,
created_at, updated_at, finished_at) into sluice_jobs, in the database of the
config. Statuses map pending, processing (back to pending, the interrupted run
not charged), success, failed and cancelled; --status adds or changes a
mapping. DATETIME columns are wall times: they are read in --time-zone (the
zone of the code that wrote them: PHP's date.timezone for date(), ThinkPHP's
default_timezone, or the MySQL session's for NOW()) and stored as UTC.
TIMESTAMP columns are instants and are read as such, whatever --time-zone
says. A row the old loop still holds (locked_until in the future) stops the
import unless --ignore-locks: it would run twice. Every payload must pass the
rules of every other enqueue (a JSON object of at most 1 MiB, valid UTF-8, no
NUL, no repeated member, numbers a 64-bit float holds) and is copied byte for
byte. Business keys are kept. Every type must be in the config's types:.
Each copied row is recorded in sluice_imports, so running the import again
copies only rows not copied before. --dry-run checks every row, prints the
counts and a sample row's times as read and as stored, and writes nothing.
Problems are printed one row per line, and nothing is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runImport(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "polling_jobs", "the table to copy from")
	f.StringArrayVar(&o.columns, "column", nil, "COLUMN=SOURCE: read COLUMN (one of "+strings.Join(driver.ImportColumns, ", ")+") from SOURCE; SOURCE empty for none (repeatable)")
	f.StringArrayVar(&o.statuses, "status", nil, "SOURCE=STATUS: map the table's status SOURCE to pending, success, failed or cancelled (repeatable)")
	f.StringVar(&o.zone, "time-zone", "", "the time zone of the table's DATETIME values, such as Asia/Shanghai or UTC (required when it has DATETIME columns)")
	f.BoolVar(&o.dryRun, "dry-run", false, "check every row, print the counts and a sample row's times; write nothing")
	f.BoolVar(&o.ignoreLocks, "ignore-locks", false, "copy rows whose locked_until is still in the future (the old loop may be running them: they may run twice)")
	f.IntVar(&o.batch, "batch", 500, "rows per transaction")
	return cmd
}

// importRow is one source row, checked and converted.
type importRow struct {
	sourceID    int64
	key         sql.NullString
	typ         string
	payload     []byte
	from        string // the source status
	status      sluicetype.Status
	attempts    int
	maxAttempts int
	nextRunAt   time.Time
	lastError   sql.NullString
	createdAt   time.Time
	updatedAt   time.Time
	finishedAt  sql.NullTime
	// lockedUntil is the old loop's lock on the row, if any.
	lockedUntil sql.NullTime
	// raw are the time columns as the table holds them, for --dry-run.
	raw [5]sql.NullString
}

func (a *app) runImport(ctx context.Context, o importOptions) error {
	d, err := a.open()
	if err != nil {
		return err
	}
	if _, err := driver.CheckSchema(ctx, d); err != nil {
		return err
	}
	im, ok := d.(driver.Importer)
	if !ok {
		return usagef("import: --db is %s; import reads MySQL/MariaDB tables only", d.Name())
	}
	if o.batch < 1 {
		return usagef("import: --batch: must be at least 1")
	}
	if !identRE.MatchString(o.table) {
		return usagef("import: --table %q: want a table name", o.table)
	}
	cols := map[string]string{}
	for _, c := range driver.ImportColumns {
		cols[c] = c
	}
	for _, m := range o.columns {
		name, src, ok := strings.Cut(m, "=")
		if !ok || !slices.Contains(driver.ImportColumns, name) {
			return usagef("import: --column %q: want COLUMN=SOURCE, COLUMN one of %s", m, strings.Join(driver.ImportColumns, ", "))
		}
		if src != "" && !identRE.MatchString(src) {
			return usagef("import: --column %s: %q is not a column name", name, src)
		}
		if src == "" && (name == "id" || name == "type") {
			return usagef("import: --column %s: required, cannot be mapped to nothing", name)
		}
		cols[name] = src
	}
	statuses := map[string]sluicetype.Status{}
	for k, v := range defaultImportStatuses {
		statuses[k] = v
	}
	for _, m := range o.statuses {
		src, to, ok := strings.Cut(m, "=")
		st := sluicetype.Status(to)
		if !ok || src == "" || !slices.Contains([]sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusSuccess, sluicetype.StatusFailed, sluicetype.StatusCancelled}, st) {
			return usagef("import: --status %q: want SOURCE=STATUS, STATUS one of pending, success, failed, cancelled", m)
		}
		statuses[src] = st
	}
	kinds, err := im.ImportSourceColumns(ctx, o.table)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(kinds) == 0 {
		return usagef("import: no table %s in this database", o.table)
	}
	zone, err := importZone(o.zone, cols, kinds)
	if err != nil {
		return err
	}
	for _, c := range driver.ImportColumns {
		if cols[c] != "" {
			if _, ok := kinds[strings.ToLower(cols[c])]; !ok {
				return usagef("import: %s has no column %s (for %s; map it with --column %s=SOURCE, or to nothing with --column %s=)", o.table, cols[c], c, c, c)
			}
		}
	}
	known, err := a.loadConfig()
	if err != nil {
		return err
	}
	// The rules of every other enqueue path (type, key, payload), from the
	// library: an enqueue-only client checks without writing.
	rules, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		return err
	}
	check := func(typ, key string, payload []byte) error {
		return rules.ValidateEnqueue(sluice.EnqueueParams{Type: typ, Key: key, Payload: json.RawMessage(payload)})
	}
	// Locks are compared with the database's clock, as the old loop's were.
	now, err := d.Now(ctx)
	if err != nil {
		return fmt.Errorf("import: read the database clock: %w", err)
	}
	scan := func(fn func(importRow, error) error) error {
		return scanImport(ctx, im, o.table, cols, kinds, zone, statuses, check, now, fn)
	}

	// Pass 1: check every row, so that a bad one stops the import before
	// anything is written.
	counts := map[string]int{}
	unknownTypes := map[string]int{}
	var problems []string
	var sample *importRow
	locked := 0
	total := 0
	err = scan(func(r importRow, perr error) error {
		total++
		if perr != nil {
			problems = append(problems, perr.Error())
			return nil
		}
		if r.status == sluicetype.StatusPending && r.lockedUntil.Valid && r.lockedUntil.Time.After(now) {
			if !o.ignoreLocks {
				problems = append(problems, fmt.Sprintf("row id %d: status %s, locked_until %s: the old loop may still be running it; stop the old cron line and import once the lock has passed, or pass --ignore-locks to copy it as runnable (it may run twice)",
					r.sourceID, r.from, r.raw[4].String))
				return nil
			}
			locked++
		}
		if sample == nil {
			sample = &r
		}
		if _, ok := known.Types[r.typ]; !ok {
			unknownTypes[r.typ]++
		}
		counts[r.from+">"+string(r.status)]++
		return nil
	})
	if err != nil {
		return err
	}
	if len(unknownTypes) > 0 {
		var names []string
		for t, n := range unknownTypes {
			names = append(names, fmt.Sprintf("%s (%d rows)", t, n))
		}
		sort.Strings(names)
		problems = append(problems, fmt.Sprintf("types not in the config's types: %s; add them to sluice.yaml first", strings.Join(names, ", ")))
	}
	if len(problems) > 0 {
		// One problem a line, each naming its row, before the error line.
		n := len(problems)
		if n > 50 {
			problems = append(problems[:50], fmt.Sprintf("and %d more", n-50))
		}
		for _, p := range problems {
			fmt.Fprintf(a.stderr, "%s: %s\n", o.table, p)
		}
		what := "problems"
		if n == 1 {
			what = "problem"
		}
		return fmt.Errorf("import %s: %d %s (listed above); nothing written", o.table, n, what)
	}
	fmt.Fprintf(a.stdout, "%s: %d rows: %s\n", o.table, total, describeCounts(counts))
	if locked > 0 {
		fmt.Fprintf(a.stdout, "%d rows still locked by the old loop are copied as runnable (--ignore-locks)\n", locked)
	}
	if o.dryRun {
		if sample != nil {
			writeSampleTimes(a.stdout, *sample, cols, kinds, zone)
		}
		fmt.Fprintf(a.stdout, "dry run: nothing written\n")
		return nil
	}

	// Pass 2: copy, batch by batch, each row with its record in the ledger.
	// The settings of the config's types as the library runs them, its
	// defaults filled in; a type the config does not know is absent.
	settings := map[string]sluice.Type{}
	for name, t := range known.Types {
		settings[name] = setup.Type(t).WithDefaults()
	}
	var res struct{ copied, before, keyTaken int }
	var batch []importRow
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		rows := make([]driver.ImportRow, len(batch))
		for i, r := range batch {
			t := settings[r.typ]
			rows[i] = driver.ImportRow{SourceID: r.sourceID, Type: r.typ, Key: r.key, Payload: string(r.payload), Status: r.status,
				Attempts: r.attempts, MaxAttempts: r.maxAttempts, NextRunAt: r.nextRunAt, LastError: r.lastError,
				CreatedAt: r.createdAt, UpdatedAt: r.updatedAt, FinishedAt: r.finishedAt, Queue: t.Queue, Dedupe: t.Dedupe}
		}
		batch = batch[:0]
		n, err := im.Import(ctx, driver.ImportParams{Source: o.table, Rows: rows})
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		res.copied, res.before, res.keyTaken = res.copied+n.Copied, res.before+n.Before, res.keyTaken+n.KeyTaken
		return nil
	}
	err = scan(func(r importRow, perr error) error {
		if perr == nil && !o.ignoreLocks && r.status == sluicetype.StatusPending && r.lockedUntil.Valid && r.lockedUntil.Time.After(now) {
			perr = fmt.Errorf("row id %d: locked by the old loop", r.sourceID)
		}
		if perr != nil {
			return fmt.Errorf("import %s: the table changed during the import: %w", o.table, perr)
		}
		batch = append(batch, r)
		if len(batch) >= o.batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("%w (copied before the error: %d; run the import again to copy the rest)", err, res.copied)
	}
	fmt.Fprintf(a.stdout, "copied %d, already imported %d, key held by another sluice job %d\n", res.copied, res.before, res.keyTaken)
	return nil
}

// importZone is the zone of the DATETIME columns, which hold wall-clock
// times without one. TIMESTAMP columns are instants: sluice's session
// reads them in UTC, and the zone never applies to them (zoneOf).
func importZone(name string, cols, kinds map[string]string) (*time.Location, error) {
	var naive []string
	for _, c := range driver.ImportTimeColumns {
		if src := cols[c]; src != "" && kinds[strings.ToLower(src)] == "datetime" {
			naive = append(naive, src)
		}
	}
	if name == "" {
		if len(naive) > 0 {
			return nil, usagef("import: --time-zone: required, since %s are DATETIME columns without a zone: give the zone of the code that wrote them, such as Asia/Shanghai or UTC: for PHP's date(), its date.timezone (php -r 'echo date_default_timezone_get();' run as the app runs; ThinkPHP sets it from default_timezone in config/app.php); for MySQL's NOW(), the session's zone (SELECT @@global.time_zone, @@system_time_zone); --dry-run shows a sample row's times as read and as stored", strings.Join(naive, ", "))
		}
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, usagef("import: --time-zone %q: %v", name, err)
	}
	return loc, nil
}

// zoneOf is the zone a time column's text is read in: the given zone for a
// DATETIME (a wall time), UTC for a TIMESTAMP, which sluice's UTC session
// gives as the instant it is.
func zoneOf(kind string, zone *time.Location) *time.Location {
	if kind == "datetime" {
		return zone
	}
	return time.UTC
}

// scanImport reads the table in id order through the driver and calls fn
// with each row, or with the problem that makes it impossible to copy.
func scanImport(ctx context.Context, im driver.Importer, table string, cols, kinds map[string]string, zone *time.Location,
	statuses map[string]sluicetype.Status, check func(typ, key string, payload []byte) error, now time.Time,
	fn func(importRow, error) error) error {
	var zones [5]*time.Location
	for i, c := range driver.ImportTimeColumns {
		zones[i] = zoneOf(kinds[strings.ToLower(cols[c])], zone)
	}
	var fnErr error // fn's own error, which the scan returns as it is
	err := im.ScanImport(ctx, driver.ScanImportParams{Table: table, Columns: cols, MaxPayload: sluice.MaxPayloadBytes}, func(s driver.ImportSourceRow) error {
		var r importRow
		var perr error
		switch {
		case s.PayloadSize.Valid && s.PayloadSize.Int64 > sluice.MaxPayloadBytes:
			perr = fmt.Errorf("payload: %d bytes, at most %d allowed", s.PayloadSize.Int64, sluice.MaxPayloadBytes)
		case s.Problem != nil:
			perr = s.Problem
		default:
			r, perr = convertImportRow(s.ID, s.Key, s.Type, s.Payload, s.Status, s.Attempts, s.MaxAttempts, s.Times, s.LastError, zones, statuses, check, now)
		}
		if perr != nil {
			perr = fmt.Errorf("row id %d: %w", s.ID, perr)
		}
		fnErr = fn(r, perr)
		return fnErr
	})
	if err != nil && !errors.Is(err, fnErr) {
		return fmt.Errorf("import: %w", err)
	}
	return err
}

func convertImportRow(id int64, key sql.NullString, typ string, payload []byte, status sql.NullString, attempts, maxAttempts sql.NullInt64,
	times [5]sql.NullString, lastError sql.NullString, zones [5]*time.Location, statuses map[string]sluicetype.Status,
	check func(typ, key string, payload []byte) error, now time.Time) (importRow, error) {
	r := importRow{sourceID: id, typ: typ, key: key, lastError: lastError, attempts: int(attempts.Int64), maxAttempts: int(maxAttempts.Int64), raw: times}
	if key.Valid && key.String == "" {
		r.key.Valid = false // the old table's "no key"
	}
	// NULL, empty and null are no payload, as at every enqueue; any other
	// is copied as read, once the enqueue rules accept it.
	r.payload = []byte("{}")
	if t := bytes.TrimSpace(payload); payload != nil && len(t) > 0 && string(t) != "null" {
		r.payload = payload
	}
	if err := check(typ, r.key.String, r.payload); err != nil {
		return r, err
	}
	if !status.Valid {
		return r, errors.New("status: NULL")
	}
	r.from = status.String
	st, ok := statuses[status.String]
	if !ok {
		return r, fmt.Errorf("status %q: not mapped; add --status %s=pending|success|failed|cancelled", status.String, status.String)
	}
	r.status = st
	if !maxAttempts.Valid {
		r.maxAttempts = 0 // the type's or the column's default
	} else if r.maxAttempts < 1 {
		return r, fmt.Errorf("max_attempts: %d, must be at least 1", r.maxAttempts)
	}
	if r.attempts < 0 {
		return r, fmt.Errorf("attempts: %d, must not be negative", r.attempts)
	}
	var ts [5]sql.NullTime
	for i, t := range times {
		if !t.Valid {
			continue
		}
		v, err := time.ParseInLocation("2006-01-02 15:04:05.000000", t.String, zones[i])
		if err != nil {
			return r, fmt.Errorf("%s: %q: %v", driver.ImportTimeColumns[i], t.String, err)
		}
		ts[i] = sql.NullTime{Time: v.UTC(), Valid: true}
	}
	r.lockedUntil = ts[4]
	r.createdAt = now
	if ts[1].Valid {
		r.createdAt = ts[1].Time
	}
	r.updatedAt = r.createdAt
	if ts[2].Valid {
		r.updatedAt = ts[2].Time
	}
	r.nextRunAt = r.createdAt
	if ts[0].Valid {
		r.nextRunAt = ts[0].Time
	}
	if r.status == sluicetype.StatusPending {
		if r.from == "processing" {
			// Its lease belonged to the old loop, which no longer holds
			// it (see the lock check): it may run at once.
			r.nextRunAt = now
		}
		if r.maxAttempts > 0 && r.attempts >= r.maxAttempts {
			// Pending with no attempt left: give it the one it was waiting for.
			r.maxAttempts = r.attempts + 1
		}
	} else {
		r.finishedAt = ts[3]
		if !r.finishedAt.Valid {
			r.finishedAt = sql.NullTime{Time: r.updatedAt, Valid: true}
		}
	}
	if r.lastError.Valid && len(r.lastError.String) > maxImportError {
		s := r.lastError.String[:maxImportError]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		r.lastError.String = s
	}
	return r, nil
}

// writeSampleTimes shows, for --dry-run, one row's times as the table
// holds them and as sluice will store them, so that a wrong --time-zone
// shows before anything is written.
func writeSampleTimes(out io.Writer, r importRow, cols, kinds map[string]string, zone *time.Location) {
	stored := map[string]string{"next_run_at": utcText(r.nextRunAt), "created_at": utcText(r.createdAt), "updated_at": utcText(r.updatedAt)}
	if r.finishedAt.Valid {
		stored["finished_at"] = utcText(r.finishedAt.Time)
	}
	if r.lockedUntil.Valid {
		stored["locked_until"] = utcText(r.lockedUntil.Time) + " (compared with now, not stored)"
	}
	fmt.Fprintf(out, "sample row id %d, times as read -> as stored (UTC):\n", r.sourceID)
	for i, c := range driver.ImportTimeColumns {
		if !r.raw[i].Valid {
			continue
		}
		kind := kinds[strings.ToLower(cols[c])]
		read := fmt.Sprintf("%s (%s", strings.TrimSuffix(strings.TrimRight(r.raw[i].String, "0"), "."), strings.ToUpper(kind))
		if kind == "datetime" {
			read += ", read in " + zone.String() + ")"
		} else {
			read += ", an instant)"
		}
		after := stored[c]
		if c == "next_run_at" && r.from == "processing" {
			after += " (was processing: runnable at once)"
		}
		fmt.Fprintf(out, "  %s: %s -> %s\n", c, read, after)
	}
}

func utcText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999") }

func describeCounts(counts map[string]int) string {
	by := map[sluicetype.Status]int{}
	fromProcessing := 0
	for k, n := range counts {
		from, to, _ := strings.Cut(k, ">")
		by[sluicetype.Status(to)] += n
		if from == "processing" && to == string(sluicetype.StatusPending) {
			fromProcessing += n
		}
	}
	var parts []string
	for _, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusSuccess, sluicetype.StatusFailed, sluicetype.StatusCancelled} {
		p := fmt.Sprintf("%s %d", st, by[st])
		if st == sluicetype.StatusPending && fromProcessing > 0 {
			p += fmt.Sprintf(" (%d were processing)", fromProcessing)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
