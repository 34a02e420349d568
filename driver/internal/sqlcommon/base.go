// Package sqlcommon holds what the three bundled SQL drivers share:
//
//   - Base, the driver methods whose logic is the same everywhere and
//     differ only in SQL text; the drivers embed it and override the
//     methods where a database has a better shape (batched inserts,
//     claims, completions), and ClaimFair, the fair and limited claim;
//   - the SQL catalogue: Queries, the typed set of statements every
//     dialect provides, LoadQueries, which fills it and a driver's own
//     additions from the -- name: sections of queries/*.sql, and the
//     statements all three dialects run verbatim (queries/ here; see
//     Queries for which statements are shared and which are written per
//     dialect);
//   - the markers a statement holds: JobColumnsMarker, the job column
//     list that jobColumns defines once for the SQL and for
//     JobScanner.Dest; ListMarker, a list of placeholders (List, Bind);
//     TypesMarker, a claim's or probe's type filter (TypeFilter);
//   - the toolbox: JobScanner, Time, QueryAll and its kin, ExecCount,
//     RetryTransient, migrations and the table prefix.
//
// It is internal to package driver's tree: it changes with the bundled
// drivers and promises nothing to anyone else.
package sqlcommon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Dialect is what Base needs to know about a database beyond its SQL files.
type Dialect struct {
	// Placeholder renders the n-th (1-based) bind parameter.
	Placeholder func(n int) string
	// Duration renders a duration argument for SQL that adds it to the
	// database clock.
	Duration func(time.Duration) any
	// Time renders an absolute time argument.
	Time func(time.Time) any
	// Transient reports errors worth retrying: deadlocks, serialization
	// failures, a busy database.
	Transient func(error) bool
	// UniqueViolation reports a duplicate-key error.
	UniqueViolation func(error) bool
}

// Base implements the driver methods whose logic is the same everywhere.
type Base struct {
	Dialect
	// Read serves queries, Write serves changes. They are the same pool
	// except on SQLite, which has one writer connection.
	Read, Write *sql.DB
	// Q is the dialect's statements, the Queries in its own struct.
	Q *Queries
	// PurgeBound, where set, gives the purge query the highest id it need
	// read, as the argument before the limit; 0 means none is due. MySQL
	// sets it: without a partial index its purge reads rows in id order.
	PurgeBound func(ctx context.Context, status sluicetype.Status, olderThan time.Duration) (int64, error)
}

// ProbeRunnable is driver.Prober's Runnable: Runnable must select on
// exactly what the dialect's claim does. It reads on the read pool, so
// that on SQLite it never waits for the writer.
func (b *Base) ProbeRunnable(ctx context.Context, p driver.RunnableParams) (bool, error) {
	q := TypeFilter(b.Q.Runnable, 2, p.Types, b.Placeholder)
	var one int
	err := b.Read.QueryRowContext(ctx, q, append([]any{p.Queue}, Args(p.Types)...)...).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("probe queue %s for runnable jobs: %w", p.Queue, err)
	}
	return true, nil
}

// ExecCount runs q on the writer, retried whole on transient errors, and
// returns the number of rows it changed.
func (b *Base) ExecCount(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := RetryTransient(ctx, b.Transient, func() error {
		res, err := b.Write.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// DB is the pool for callers' own transactions.
func (b *Base) DB() *sql.DB { return b.Write }

// Now reads the database clock.
func (b *Base) Now(ctx context.Context) (time.Time, error) {
	var t Time
	if err := b.Read.QueryRowContext(ctx, b.Q.Now).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t.Time, nil
}

// InTx runs fn in tx when the caller gave one (EnqueueTx), or else in a
// write transaction of its own, committed on success and retried whole on
// transient errors.
func (b *Base) InTx(ctx context.Context, tx *sql.Tx, fn func(*sql.Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return RetryTransient(ctx, b.Transient, func() error {
		own, err := b.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer own.Rollback()
		if err := fn(own); err != nil {
			return err
		}
		return own.Commit()
	})
}

// InKeyOrder runs insert on jobs with the keyed rows sorted by business key
// (byte order, which is how every schema compares keys) and returns the
// results in the order of jobs. Inserting a key waits for any uncommitted
// writer of the same key, so two batches that reach shared keys in
// different orders can wait on each other until the database kills one as
// a deadlock victim; in one global order no such cycle exists. Keyless rows
// take no key lock and keep their places, so their ids still follow the
// input; rows with the same key keep their input order, so the first
// occurrence in the batch is still the one inserted.
func InKeyOrder(jobs []driver.InsertJob, insert func([]driver.InsertJob) ([]driver.InsertResult, error)) ([]driver.InsertResult, error) {
	var slots []int // the positions of the keyed rows
	for i, j := range jobs {
		if j.Key != "" {
			slots = append(slots, i)
		}
	}
	order := slices.Clone(slots)
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(jobs[a].Key, jobs[b].Key) })
	if slices.Equal(order, slots) {
		return insert(jobs)
	}
	sorted := slices.Clone(jobs)
	for n, s := range slots {
		sorted[s] = jobs[order[n]]
	}
	res, err := insert(sorted)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(res)
	for n, s := range slots {
		out[order[n]] = res[s]
	}
	return out, nil
}

// Insert is the SQL drivers' driver.Driver Insert: insertAll adds a
// nonempty batch, in tx (the caller's p.Tx, nil for none), with the keyed
// rows in InKeyOrder's global order, so that overlapping batches cannot
// deadlock.
func Insert(ctx context.Context, p driver.InsertParams, insertAll func(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error)) ([]driver.InsertResult, error) {
	if len(p.Jobs) == 0 {
		return nil, nil
	}
	return InKeyOrder(p.Jobs, func(jobs []driver.InsertJob) ([]driver.InsertResult, error) {
		return insertAll(ctx, p.Tx, jobs)
	})
}

// RowName names row i of a batch passed through InKeyOrder in an error:
// keyless rows keep their input position, keyed rows are named by key.
func RowName(i int, j driver.InsertJob) string {
	if j.Key != "" {
		return fmt.Sprintf("job with key %q", j.Key)
	}
	return fmt.Sprintf("job %d", i)
}

// InList expands the ListMarker in q to n placeholders numbered from start.
func (b *Base) InList(q string, start, n int) string {
	return List(q, start, n, b.Placeholder)
}

// GetJob reads one job.
func (b *Base) GetJob(ctx context.Context, id int64) (*sluicetype.JobRow, error) {
	// Get is the standard column list and the history.
	var s JobScanner
	var history []byte
	err := b.Read.QueryRowContext(ctx, b.Q.Get, id).Scan(append(s.Dest(), &history)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, sluicetype.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, err)
	}
	job := s.Row()
	if job.History, err = DecodeHistory(history); err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, err)
	}
	return &job, nil
}

// ListJobs returns jobs newest first, after AfterID, filtered.
func (b *Base) ListJobs(ctx context.Context, p sluicetype.ListParams) ([]sluicetype.JobRow, error) {
	q, args := b.ListQuery(p)
	var from driver.Querier = b.Read
	if p.Tx != nil {
		from = p.Tx
	}
	rows, err := from.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := ScanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// Heartbeat extends the leases held with p.Token and reports the lost ones.
func (b *Base) Heartbeat(ctx context.Context, p driver.HeartbeatParams) ([]int64, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	args := append(make([]any, 0, len(p.IDs)+2), b.Duration(p.Lease), p.Token)
	for _, id := range p.IDs {
		args = append(args, id)
	}
	n, err := b.ExecCount(ctx, b.InList(b.Q.Heartbeat, 3, len(p.IDs)), args...)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	if int(n) == len(p.IDs) {
		return nil, nil
	}
	return b.lostOf(ctx, p.Token, p.IDs)
}

// lostOf returns the ids in ids that are no longer held with token.
func (b *Base) lostOf(ctx context.Context, token string, ids []int64) ([]int64, error) {
	args := append(make([]any, 0, len(ids)+1), token)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := b.Write.QueryContext(ctx, b.InList(b.Q.Held, 2, len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", err)
	}
	held, err := IDSet(rows, len(ids))
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", err)
	}
	return Missing(ids, held), nil
}

// CompletionArgs are the arguments of Complete, in its order: the
// outcome's, the history entry and limit as entry, keep, keep, entry (MySQL
// and SQLite bind each placeholder once), then the id and token.
func (b *Base) CompletionArgs(c driver.Completion) []any {
	entry, keep := HistoryArgs(c)
	return append(b.outcomeArgs(c), entry, keep, keep, entry, c.ID, c.Token)
}

// ManyRowArgs are one row of a batch's derived table (MySQL's
// CompleteManyFirst): the outcome, the id and the token.
func (b *Base) ManyRowArgs(c driver.Completion) []any {
	return append(b.outcomeArgs(c), c.ID, c.Token)
}

// ManyHistoryRowArgs are one row of a batch that writes history
// (CompleteManyHistoryFirst), which names the entry and limit once.
func (b *Base) ManyHistoryRowArgs(c driver.Completion) []any {
	entry, keep := HistoryArgs(c)
	return append(b.outcomeArgs(c), entry, keep, c.ID, c.Token)
}

// outcomeArgs are the status, refund, final, delay, final, error and
// result arguments that Complete and a batch row start with.
func (b *Base) outcomeArgs(c driver.Completion) []any {
	refund := 0
	if c.Refund {
		refund = 1
	}
	var errText, result *string
	if c.Error != nil {
		s := driver.StorableText(*c.Error, sluicetype.MaxErrorLen, true)
		errText = &s
	}
	if c.Result != nil {
		s := driver.StorableText(*c.Result, sluicetype.MaxResultLen, true)
		result = &s
	}
	final := 0
	if c.Status != sluicetype.StatusPending {
		final = 1
	}
	return []any{c.Status, refund, final, b.Duration(c.Delay), final, PtrString(errText), PtrString(result)}
}

// HistoryArgs are the history entry to append (NULL for none) and the
// number of attempts to keep.
func HistoryArgs(c driver.Completion) (sql.NullString, int) {
	if c.Attempt == nil {
		return sql.NullString{}, driver.KeepAttempts(c.KeepAttempts)
	}
	return sql.NullString{String: EncodeAttempt(c.Attempt), Valid: true}, driver.KeepAttempts(c.KeepAttempts)
}

// CompleteTx applies one fenced outcome in the caller's transaction.
func (b *Base) CompleteTx(ctx context.Context, p driver.CompleteTxParams) (bool, error) {
	tx, c := p.Tx, p.Completion
	res, err := tx.ExecContext(ctx, b.Q.Complete, b.CompletionArgs(c)...)
	if err != nil {
		return false, fmt.Errorf("complete job %d: %w", c.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("complete job %d: %w", c.ID, err)
	}
	return n == 1, nil
}

// CompleteEach is CompleteEachTx in a transaction of its own, retried on
// transient errors.
func (b *Base) CompleteEach(ctx context.Context, cs []driver.Completion) ([]int64, error) {
	var lost []int64
	err := b.InTx(ctx, nil, func(tx *sql.Tx) (err error) {
		lost, err = b.CompleteEachTx(ctx, tx, cs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs: %w", len(cs), err)
	}
	return lost, nil
}

// CompleteEachTx applies completions one prepared statement each in tx and
// returns the ids whose lease was lost. It suits SQLite, where a statement
// costs no round trip.
func (b *Base) CompleteEachTx(ctx context.Context, tx *sql.Tx, cs []driver.Completion) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	stmt, err := tx.PrepareContext(ctx, b.Q.Complete)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	var lost []int64
	for _, c := range cs {
		res, err := stmt.ExecContext(ctx, b.CompletionArgs(c)...)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			lost = append(lost, c.ID)
		}
	}
	return lost, nil
}

// Rescue returns expired leases to pending, or fails jobs out of attempts.
func (b *Base) Rescue(ctx context.Context, p driver.RescueParams) (sluicetype.RescueResult, error) {
	var r sluicetype.RescueResult
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	err := RetryTransient(ctx, b.Transient, func() error {
		r = sluicetype.RescueResult{}
		keep := driver.KeepAttempts(p.KeepAttempts)
		rows, err := b.Write.QueryContext(ctx, b.Q.Rescue, keep, keep, limit)
		if err != nil {
			return err
		}
		return EachRow(rows, func(rows *sql.Rows) error {
			var status sluicetype.Status
			var queue, typ string
			err := rows.Scan(&status, &queue, &typ)
			r.CountRescued(status, queue, typ)
			return err
		})
	})
	if err != nil {
		return r, fmt.Errorf("rescue expired leases: %w", err)
	}
	return r, nil
}

// Purge deletes one chunk of old finished jobs.
func (b *Base) Purge(ctx context.Context, p driver.PurgeParams) (int64, error) {
	if !sluicetype.IsFinal(p.Status) {
		return 0, fmt.Errorf("purge: status %q is not a finished state (success, failed, cancelled)", p.Status)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	args := []any{p.Status, b.Duration(-p.OlderThan), limit}
	if b.PurgeBound != nil {
		bound, err := b.PurgeBound(ctx, p.Status, p.OlderThan)
		if err != nil {
			return 0, fmt.Errorf("purge %s jobs: %w", p.Status, err)
		}
		if bound == 0 {
			return 0, nil
		}
		args = []any{p.Status, b.Duration(-p.OlderThan), bound, limit}
	}
	n, err := b.ExecCount(ctx, b.Q.Purge, args...)
	if err != nil {
		return 0, fmt.Errorf("purge %s jobs: %w", p.Status, err)
	}
	return n, nil
}

// Retry moves one job, or every failed job (of a type), back to pending.
func (b *Base) Retry(ctx context.Context, p driver.RetryParams) (int64, error) {
	if !p.AllFailed {
		if err := b.retryOne(ctx, p.ID); err != nil {
			return 0, err
		}
		return 1, nil
	}
	// Chunks of ids keep each statement short and let a job whose key is
	// taken be skipped without failing the rest.
	var total int64
	after := int64(0)
	for {
		ids, err := QueryAll(ctx, b.Read, "retry failed jobs", b.Q.RetryIDs, []any{sluicetype.StatusFailed, p.Type, p.Type, after}, ScanID)
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		for _, id := range ids {
			switch err := b.retryOne(ctx, id); {
			case err == nil:
				total++
			case errors.Is(err, sluicetype.ErrKeyTaken), errors.Is(err, sluicetype.ErrWrongState):
			default:
				return total, err
			}
		}
		after = ids[len(ids)-1]
	}
}

func (b *Base) retryOne(ctx context.Context, id int64) error {
	res, err := b.Write.ExecContext(ctx, b.InList(b.Q.Retry, 1, 1), id)
	if err != nil {
		if b.UniqueViolation(err) {
			return fmt.Errorf("retry job %d: %w", id, sluicetype.ErrKeyTaken)
		}
		return fmt.Errorf("retry job %d: %w", id, err)
	}
	return b.checkChanged(ctx, res, id, "retry")
}

// Cancel moves a pending or failed job to cancelled.
func (b *Base) Cancel(ctx context.Context, id int64) error {
	res, err := b.Write.ExecContext(ctx, b.InList(b.Q.Cancel, 1, 1), id)
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", id, err)
	}
	return b.checkChanged(ctx, res, id, "cancel")
}

// checkChanged turns "zero rows changed" into not-found or wrong-state.
func (b *Base) checkChanged(ctx context.Context, res sql.Result, id int64, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s job %d: %w", op, id, err)
	}
	if n > 0 {
		return nil
	}
	var status string
	switch err := b.Write.QueryRowContext(ctx, b.Q.Exists, id).Scan(&status); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s job %d: %w", op, id, sluicetype.ErrNotFound)
	case err != nil:
		return fmt.Errorf("%s job %d: %w", op, id, err)
	}
	return fmt.Errorf("%s job %d (status %s): %w", op, id, status, sluicetype.ErrWrongState)
}

// Stats counts live jobs per queue. Each part of Stats reads one
// partial index, so finished rows are never scanned.
func (b *Base) Stats(ctx context.Context) ([]sluicetype.QueueStats, error) {
	byQueue := map[string]*sluicetype.QueueStats{}
	var order []string
	err := QueryEach(ctx, b.Read, "stats", b.Q.Stats, nil, func(rows *sql.Rows) error {
		var queue string
		var status sluicetype.Status
		var n int64
		var oldest Time
		if err := rows.Scan(&queue, &status, &n, &oldest); err != nil {
			return err
		}
		s := byQueue[queue]
		if s == nil {
			s = &sluicetype.QueueStats{Queue: queue}
			byQueue[queue] = s
			order = append(order, queue)
		}
		switch status {
		case sluicetype.StatusPending:
			s.Pending, s.OldestPending = n, oldest.Ptr()
		case sluicetype.StatusProcessing:
			s.Processing = n
		case sluicetype.StatusFailed:
			s.Failed = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]sluicetype.QueueStats, 0, len(order))
	for _, q := range order {
		out = append(out, *byQueue[q])
	}
	return out, nil
}

// SetQueuePaused records a queue's paused flag.
func (b *Base) SetQueuePaused(ctx context.Context, p driver.SetQueuePausedParams) error {
	queue, paused := p.Queue, p.Paused
	if _, err := b.Write.ExecContext(ctx, b.Q.QueuePause, queue, paused); err != nil {
		return fmt.Errorf("set queue %s paused=%v: %w", queue, paused, err)
	}
	return nil
}

// PausedQueues returns the queues whose paused flag is set.
func (b *Base) PausedQueues(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	err := QueryEach(ctx, b.Read, "read paused queues", b.Q.QueuesPaused, nil, func(rows *sql.Rows) error {
		var q string
		err := rows.Scan(&q)
		out[q] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetLease reads a lease row; a missing row is a free lease.
func (b *Base) GetLease(ctx context.Context, q driver.Querier, name string) (sluicetype.LeaseState, bool, error) {
	var l sluicetype.LeaseState
	var since, until Time
	err := q.QueryRowContext(ctx, b.Q.LeaseGet, name).Scan(&l.Holder, &l.Fence, &since, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("read lease %s: %w", name, err)
	}
	l.Since, l.Until = since.Time, until.Time
	return l, true, nil
}

// UpsertLease acquires through acquire, an upsert that only changes the
// row when the lease is free or already ours (SQLite's and PostgreSQL's
// LeaseAcquire).
func (b *Base) UpsertLease(ctx context.Context, p driver.LeaseParams, acquire string) (sluicetype.LeaseState, error) {
	var l sluicetype.LeaseState
	err := RetryTransient(ctx, b.Transient, func() error {
		var since, until Time
		err := b.Write.QueryRowContext(ctx, acquire, p.Name, p.Holder, b.Duration(p.TTL)).
			Scan(&l.Holder, &l.Fence, &since, &until)
		if errors.Is(err, sql.ErrNoRows) {
			cur, _, err := b.GetLease(ctx, b.Write, p.Name)
			l = cur
			return err
		}
		if err != nil {
			return err
		}
		l.Held, l.Since, l.Until = true, since.Time, until.Time
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("acquire lease %s: %w", p.Name, err)
	}
	return l, nil
}

// ReleaseLease frees the lease if holder holds it. The row stays, so that
// its fencing number keeps growing across holders.
func (b *Base) ReleaseLease(ctx context.Context, p driver.ReleaseLeaseParams) (bool, error) {
	name, holder := p.Name, p.Holder
	n, err := b.ExecCount(ctx, b.Q.LeaseRelease, name, holder)
	if err != nil {
		return false, fmt.Errorf("release lease %s: %w", name, err)
	}
	return n == 1, nil
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

// IsTransient reports errors worth retrying whole.
func (b *Base) IsTransient(err error) bool { return b.Transient(err) }

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
	for _, stmt := range stmts {
		if _, err := b.Write.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
