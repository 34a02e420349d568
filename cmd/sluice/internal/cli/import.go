package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/sluicetype"
)

// importColumns are the columns of the seed's polling_jobs table that
// `sluice import` reads, in the order it selects them. --column maps any of
// them to another name; id and type are required, the rest may be mapped to
// nothing ("--column last_error=").
var importColumns = []string{"id", "business_key", "type", "payload", "status", "attempts", "max_attempts",
	"next_run_at", "last_error", "created_at", "updated_at", "finished_at"}

var importTimeColumns = []string{"next_run_at", "created_at", "updated_at", "finished_at"}

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
mapping. DATETIME columns are read in --time-zone (the zone the old code's
NOW() wrote them in) and stored as UTC; TIMESTAMP columns need no zone.
Business keys are kept. Every type must be in the config's types:. Each
copied row is recorded in sluice_imports, so running the import again copies
only rows not copied before. --dry-run checks every row and prints the counts
without writing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runImport(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "polling_jobs", "the table to copy from")
	f.StringArrayVar(&o.columns, "column", nil, "COLUMN=SOURCE: read COLUMN (one of "+strings.Join(importColumns, ", ")+") from SOURCE; SOURCE empty for none (repeatable)")
	f.StringArrayVar(&o.statuses, "status", nil, "SOURCE=STATUS: map the table's status SOURCE to pending, success, failed or cancelled (repeatable)")
	f.StringVar(&o.zone, "time-zone", "", "the time zone of the table's DATETIME values, such as Asia/Shanghai or UTC (required when it has DATETIME columns)")
	f.BoolVar(&o.dryRun, "dry-run", false, "check every row and print the counts; write nothing")
	f.IntVar(&o.batch, "batch", 500, "rows per transaction")
	return cmd
}

// importRow is one source row, checked and converted.
type importRow struct {
	sourceID    int64
	key         sql.NullString
	typ         string
	payload     string
	from        string // the source status
	status      sluicetype.Status
	attempts    int
	maxAttempts int
	nextRunAt   time.Time
	lastError   sql.NullString
	createdAt   time.Time
	updatedAt   time.Time
	finishedAt  sql.NullTime
}

func (a *app) runImport(ctx context.Context, o importOptions) error {
	d, err := a.open()
	if err != nil {
		return err
	}
	if _, err := driver.CheckSchema(ctx, d); err != nil {
		return err
	}
	if d.Name() != "mysql" {
		return usagef("import: --db is %s; import reads MySQL/MariaDB tables only", d.Name())
	}
	if o.batch < 1 {
		return usagef("import: --batch: must be at least 1")
	}
	if !identRE.MatchString(o.table) {
		return usagef("import: --table %q: want a table name", o.table)
	}
	cols := map[string]string{}
	for _, c := range importColumns {
		cols[c] = c
	}
	for _, m := range o.columns {
		name, src, ok := strings.Cut(m, "=")
		if !ok || !slices.Contains(importColumns, name) {
			return usagef("import: --column %q: want COLUMN=SOURCE, COLUMN one of %s", m, strings.Join(importColumns, ", "))
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
	db := d.DB()
	kinds, err := columnKinds(ctx, db, o.table)
	if err != nil {
		return err
	}
	zone, err := importZone(o.zone, cols, kinds)
	if err != nil {
		return err
	}
	for _, c := range importColumns {
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

	// Pass 1: check every row, so that a bad one stops the import before
	// anything is written.
	counts := map[string]int{}
	unknownTypes := map[string]int{}
	var problems []string
	total := 0
	err = scanImport(ctx, db, o.table, cols, kinds, zone, statuses, func(r importRow, perr error) error {
		total++
		if perr != nil {
			problems = append(problems, perr.Error())
			return nil
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
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("and %d more", len(problems)-20))
		}
		return fmt.Errorf("import %s: nothing written:\n  %s", o.table, strings.Join(problems, "\n  "))
	}
	fmt.Fprintf(a.stdout, "%s: %d rows: %s\n", o.table, total, describeCounts(counts))
	if o.dryRun {
		fmt.Fprintf(a.stdout, "dry run: nothing written\n")
		return nil
	}

	// Pass 2: copy, batch by batch, each row with its record in the ledger.
	md, ok := d.(*mysql.Driver)
	if !ok {
		return fmt.Errorf("import: the MySQL driver is a %T", d)
	}
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
		rows := make([]mysql.ImportRow, len(batch))
		for i, r := range batch {
			t := settings[r.typ]
			rows[i] = mysql.ImportRow{SourceID: r.sourceID, Type: r.typ, Key: r.key, Payload: r.payload, Status: r.status,
				Attempts: r.attempts, MaxAttempts: r.maxAttempts, NextRunAt: r.nextRunAt, LastError: r.lastError,
				CreatedAt: r.createdAt, UpdatedAt: r.updatedAt, FinishedAt: r.finishedAt, Queue: t.Queue, Dedupe: t.Dedupe}
		}
		batch = batch[:0]
		n, err := md.Import(ctx, mysql.ImportParams{Source: o.table, Rows: rows})
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		res.copied, res.before, res.keyTaken = res.copied+n.Copied, res.before+n.Before, res.keyTaken+n.KeyTaken
		return nil
	}
	err = scanImport(ctx, db, o.table, cols, kinds, zone, statuses, func(r importRow, perr error) error {
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

// columnKinds returns the table's columns (lower case) and their data types.
func columnKinds(ctx context.Context, db *sql.DB, table string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table)
	if err != nil {
		return nil, fmt.Errorf("import: read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	kinds := map[string]string{}
	for rows.Next() {
		var c, k string
		if err := rows.Scan(&c, &k); err != nil {
			return nil, err
		}
		kinds[c] = k
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		return nil, usagef("import: no table %s in this database", table)
	}
	return kinds, nil
}

// importZone is the zone of the DATETIME columns, which hold wall-clock
// times without one. TIMESTAMP columns are read in sluice's UTC session.
func importZone(name string, cols, kinds map[string]string) (*time.Location, error) {
	var naive []string
	for _, c := range importTimeColumns {
		if src := cols[c]; src != "" && kinds[strings.ToLower(src)] == "datetime" {
			naive = append(naive, src)
		}
	}
	if name == "" {
		if len(naive) > 0 {
			return nil, usagef("import: --time-zone: required, since %s are DATETIME columns without a zone: give the zone the old code wrote them in (what NOW() gave; SELECT @@global.time_zone, @@system_time_zone), such as Asia/Shanghai or UTC", strings.Join(naive, ", "))
		}
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, usagef("import: --time-zone %q: %v", name, err)
	}
	return loc, nil
}

// scanImport reads the table in id order and calls fn with each row, or
// with the problem that makes it impossible to copy.
func scanImport(ctx context.Context, db *sql.DB, table string, cols, kinds map[string]string, zone *time.Location,
	statuses map[string]sluicetype.Status, fn func(importRow, error) error) error {
	sel := make([]string, len(importColumns))
	for i, c := range importColumns {
		src := cols[c]
		switch {
		case src == "":
			sel[i] = "NULL"
		case slices.Contains(importTimeColumns, c):
			sel[i] = "DATE_FORMAT(`" + src + "`, '%Y-%m-%d %H:%i:%s.%f')"
		case c == "payload":
			sel[i] = "CAST(`" + src + "` AS CHAR)"
		default:
			sel[i] = "`" + src + "`"
		}
	}
	rows, err := db.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM `"+table+"` ORDER BY `"+cols["id"]+"`")
	if err != nil {
		return fmt.Errorf("import: read %s: %w", table, err)
	}
	defer rows.Close()
	now := time.Now().UTC()
	for rows.Next() {
		var id int64
		var typ string
		var key, payload, status, lastError sql.NullString
		var attempts, maxAttempts sql.NullInt64
		var times [4]sql.NullString
		if err := rows.Scan(&id, &key, &typ, &payload, &status, &attempts, &maxAttempts,
			&times[0], &lastError, &times[1], &times[2], &times[3]); err != nil {
			return fmt.Errorf("import: read %s: %w", table, err)
		}
		r, perr := convertImportRow(id, key, typ, payload, status, attempts, maxAttempts, times, lastError, zone, statuses, now)
		if perr != nil {
			perr = fmt.Errorf("row id %d: %w", id, perr)
		}
		if err := fn(r, perr); err != nil {
			return err
		}
	}
	return rows.Err()
}

func convertImportRow(id int64, key sql.NullString, typ string, payload, status sql.NullString, attempts, maxAttempts sql.NullInt64,
	times [4]sql.NullString, lastError sql.NullString, zone *time.Location, statuses map[string]sluicetype.Status, now time.Time) (importRow, error) {
	r := importRow{sourceID: id, typ: typ, key: key, lastError: lastError, attempts: int(attempts.Int64), maxAttempts: int(maxAttempts.Int64)}
	switch n := utf8.RuneCountInString(typ); {
	case typ == "":
		return r, errors.New("type: must not be empty")
	case n > sluicetype.MaxTypeLen:
		return r, fmt.Errorf("type: %d characters, at most %d allowed", n, sluicetype.MaxTypeLen)
	case strings.ContainsRune(typ, 0):
		return r, errors.New("type: contains a NUL byte")
	}
	if key.Valid && key.String == "" {
		r.key.Valid = false // the old table's "no key"
	}
	if r.key.Valid {
		if n := utf8.RuneCountInString(key.String); n > sluicetype.MaxKeyLen {
			return r, fmt.Errorf("business_key: %d characters, at most %d allowed", n, sluicetype.MaxKeyLen)
		}
	}
	r.payload = "{}"
	if payload.Valid && strings.TrimSpace(payload.String) != "" && strings.TrimSpace(payload.String) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload.String), &obj); err != nil {
			return r, fmt.Errorf("payload: want a JSON object: %v", err)
		}
		r.payload = payload.String
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
	var ts [4]sql.NullTime
	for i, t := range times {
		if !t.Valid {
			continue
		}
		v, err := time.ParseInLocation("2006-01-02 15:04:05.000000", t.String, zone)
		if err != nil {
			return r, fmt.Errorf("%s: %q: %v", importTimeColumns[i], t.String, err)
		}
		ts[i] = sql.NullTime{Time: v.UTC(), Valid: true}
	}
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
			// Its lease belonged to the old loop: it may run at once.
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
