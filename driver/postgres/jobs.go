package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

const (
	// insertChunk bounds the rows of one INSERT, so that a huge enqueue
	// neither builds giant arrays nor holds one statement for long.
	insertChunk = 5000
	// insertRounds bounds the re-inserts of rows whose key holder finished
	// between our insert and our look-up; each round needs a holder to finish
	// in that window again, so running out means something is wrong.
	insertRounds = 10
)

// Insert adds jobs with their keys taken in one global order (see
// sqldriver.Insert), so that overlapping batches cannot deadlock.
func (d *Driver) Insert(ctx context.Context, p driver.InsertParams) ([]driver.InsertResult, error) {
	return sqldriver.Insert(ctx, p, d.insertAll)
}

// insertAll adds jobs with one INSERT ... SELECT FROM unnest(...) per chunk.
func (d *Driver) insertAll(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	if tx != nil {
		out, err := d.insert(ctx, tx, jobs)
		if err != nil {
			return nil, fmt.Errorf("enqueue %d jobs: %w", len(jobs), err)
		}
		return out, nil
	}
	// Keyless rows that fit one statement need no transaction: the
	// statement is atomic, and BEGIN and COMMIT would cost two round trips.
	single := len(jobs) <= insertChunk && !slices.ContainsFunc(jobs, func(j driver.InsertJob) bool { return j.Key != "" })
	var out []driver.InsertResult
	err := sqldriver.RetryTransient(ctx, d.Transient, func() error {
		if single {
			var err error
			out, err = d.insert(ctx, d.Write, jobs)
			return err
		}
		own, err := d.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer own.Rollback()
		if out, err = d.insert(ctx, own, jobs); err != nil {
			return err
		}
		return own.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue %d jobs: %w", len(jobs), err)
	}
	return out, nil
}

// insert sends each key's first occurrence and every keyless row; later
// occurrences of a key in the batch are duplicates of the first.
func (d *Driver) insert(ctx context.Context, q driver.Querier, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	out := make([]driver.InsertResult, len(jobs))
	first := map[string]int{}
	dupOf := map[int]int{}
	send := make([]int, 0, len(jobs))
	for i, j := range jobs {
		if j.Key != "" {
			if f, ok := first[j.Key]; ok {
				dupOf[i] = f
				continue
			}
			first[j.Key] = i
		}
		send = append(send, i)
	}
	for len(send) > 0 {
		n := min(len(send), insertChunk)
		if err := d.insertChunk(ctx, q, jobs, send[:n], out); err != nil {
			return nil, err
		}
		send = send[n:]
	}
	for i, f := range dupOf {
		out[i] = driver.InsertResult{ID: out[f].ID, Duplicate: true}
	}
	return out, nil
}

// insertChunk inserts jobs[idx...] and fills their results. Rows whose key
// is taken get the holder's id; a row whose holder is gone by the time we
// look (an active-mode job that finished) is inserted again.
func (d *Driver) insertChunk(ctx context.Context, q driver.Querier, jobs []driver.InsertJob, idx []int, out []driver.InsertResult) error {
	for round := 0; len(idx) > 0; round++ {
		if round == insertRounds {
			return fmt.Errorf("business key %q: its holder finished %d times while we enqueued", jobs[idx[0]].Key, insertRounds)
		}
		inserted, keyless, err := d.insertRows(ctx, q, jobs, idx)
		if err != nil {
			return err
		}
		// The INSERT assigns ids in input order, so the keyless rows, sent
		// in input order, match their ids sorted.
		slices.Sort(keyless)
		var taken []int
		for _, i := range idx {
			j := jobs[i]
			switch id, ok := inserted[j.Key]; {
			case j.Key == "":
				if len(keyless) == 0 {
					return errors.New("insert returned fewer rows without a key than were sent")
				}
				out[i], keyless = driver.InsertResult{ID: keyless[0]}, keyless[1:]
			case ok:
				out[i] = driver.InsertResult{ID: id}
			default:
				taken = append(taken, i)
			}
		}
		if len(taken) == 0 {
			return nil
		}
		holders, err := d.keyHolders(ctx, q, jobs, taken)
		if err != nil {
			return err
		}
		var again []int
		for _, i := range taken {
			if id, ok := holders[jobs[i].Key]; ok {
				out[i] = driver.InsertResult{ID: id, Duplicate: true}
			} else {
				again = append(again, i)
			}
		}
		idx = again
	}
	return nil
}

// insertRows runs Insert for jobs[idx...] and returns the ids of the
// inserted keyed rows by key, and those of the keyless rows.
func (d *Driver) insertRows(ctx context.Context, q driver.Querier, jobs []driver.InsertJob, idx []int) (map[string]int64, []int64, error) {
	n := len(idx)
	var (
		queues, types, dedupes, payloads = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		partitions                       = make([]string, n)
		keys                             = make([]*string, n)
		priorities, maxAttempts, delays  = make([]int64, n), make([]int64, n), make([]int64, n)
		runAts, deadlines                = make([]*time.Time, n), make([]*time.Time, n)
		deadlineAfters, progressTimeouts = make([]*int64, n), make([]*int64, n)
		traceParents                     = make([]*string, n)
	)
	for k, i := range idx {
		j := &jobs[i]
		queues[k], types[k], dedupes[k], partitions[k] = j.Queue, j.Type, j.Dedupe, j.Partition
		// An empty payload gets the column default rather than a JSON
		// syntax error.
		payloads[k] = "{}"
		if len(j.Payload) > 0 {
			payloads[k] = string(j.Payload)
		}
		if j.Key != "" {
			keys[k] = &j.Key
		}
		priorities[k], maxAttempts[k], delays[k] = int64(j.Priority), int64(j.MaxAttempts), sqldriver.Micros(j.Delay)
		if !j.RunAt.IsZero() {
			runAts[k] = &j.RunAt
		}
		if j.TraceParent != "" {
			traceParents[k] = &j.TraceParent
		}
		if !j.Deadline.IsZero() {
			deadlines[k] = &j.Deadline
		}
		if j.DeadlineAfter > 0 {
			us := sqldriver.Micros(j.DeadlineAfter)
			deadlineAfters[k] = &us
		}
		if j.ProgressTimeout > 0 {
			us := sqldriver.Micros(j.ProgressTimeout)
			progressTimeouts[k] = &us
		}
	}
	inserted := map[string]int64{}
	keyless := make([]int64, 0, n)
	args := []any{queues, types, keys, dedupes, payloads, priorities, maxAttempts, runAts, delays, traceParents, partitions, deadlines, deadlineAfters, progressTimeouts}
	err := sqldriver.QueryEach(ctx, q, "insert", d.q.Insert, args, func(rows *sql.Rows) error {
		var id int64
		var key sql.NullString
		if err := rows.Scan(&id, &key); err != nil {
			return err
		}
		if key.Valid {
			inserted[key.String] = id
		} else {
			keyless = append(keyless, id)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return inserted, keyless, nil
}

// keyHolders returns the ids of the jobs that hold the keys of jobs[idx...].
func (d *Driver) keyHolders(ctx context.Context, q driver.Querier, jobs []driver.InsertJob, idx []int) (map[string]int64, error) {
	keys := make([]string, len(idx))
	for k, i := range idx {
		keys[k] = jobs[i].Key
	}
	return sqldriver.QueryMap[string, int64](ctx, q, fmt.Sprintf("find holders of %d keys", len(keys)), d.q.KeyHolder, []any{keys})
}

// Claim runs one UPDATE over a SKIP LOCKED subquery. Outside an explicit
// transaction the statement commits by itself, which saves BEGIN and COMMIT.
func (d *Driver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	if p.Fair || p.Limits.Active() {
		// A transaction of a few statements.
		return d.ClaimFairInTx(ctx, p)
	}
	q := sqldriver.TypeFilter(d.q.Claim, 5, p.Types, d.Placeholder)
	args := append([]any{p.Token, sqldriver.Micros(p.Lease), p.Queue, p.Limit}, sqldriver.Args(p.Types)...)
	var jobs []sluicetype.JobRow
	err := sqldriver.RetryTransient(ctx, d.Transient, func() (err error) {
		jobs, err = sqldriver.QueryJobs(ctx, d.Write, q, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	// RETURNING follows no order; callers expect the pick order.
	slices.SortFunc(jobs, func(a, b sluicetype.JobRow) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.NextRunAt.Compare(b.NextRunAt), cmp.Compare(a.ID, b.ID))
	})
	return jobs, nil
}

// Complete applies a batch of fenced outcomes and returns the ids whose
// lease was lost: those without a log in one statement, those with one in
// a transaction that writes their logs too (sqldriver.CompleteLogged).
func (d *Driver) Complete(ctx context.Context, p driver.CompleteParams) ([]int64, error) {
	cs, logged := sqldriver.SplitLogged(p.Completions)
	lost, err := d.CompleteLogged(ctx, logged)
	if err != nil || len(cs) == 0 {
		return lost, err
	}
	l, err := d.completeMany(ctx, cs)
	return append(lost, l...), err
}

// completeMany applies outcomes without logs in one statement.
func (d *Driver) completeMany(ctx context.Context, cs []driver.Completion) ([]int64, error) {
	// Rows are locked in id order, as far as the plan follows the input,
	// which keeps concurrent multi-row writers from deadlocking.
	sorted := slices.Clone(cs)
	slices.SortFunc(sorted, func(a, b driver.Completion) int { return cmp.Compare(a.ID, b.ID) })
	n := len(sorted)
	var (
		ids, delays             = make([]int64, n), make([]int64, n)
		tokens, statuses        = make([]string, n), make([]string, n)
		refunds                 = make([]int32, n)
		finals                  = make([]bool, n)
		errorTexts, resultTexts = make([]*string, n), make([]*string, n)
		entries                 = make([]*string, n)
		keeps                   = make([]int32, n)
	)
	for k, c := range sorted {
		ids[k], tokens[k], statuses[k], delays[k] = c.ID, c.Token, string(c.Status), sqldriver.Micros(c.Delay)
		if c.Refund {
			refunds[k] = 1
		}
		finals[k] = c.Status != sluicetype.StatusPending
		if c.Error != nil {
			s := driver.StorableText(*c.Error, sluicetype.MaxErrorLen, true)
			errorTexts[k] = &s
		}
		if c.Result != nil {
			s := driver.StorableText(*c.Result, sluicetype.MaxResultLen, true)
			resultTexts[k] = &s
		}
		if c.Attempt != nil {
			s := sqldriver.EncodeAttempt(c.Attempt)
			entries[k] = &s
		}
		keeps[k] = int32(driver.KeepAttempts(c.KeepAttempts))
	}
	// Only a batch with a history entry pays for the history column.
	q, args := d.q.CompleteMany, []any{ids, tokens, statuses, delays, refunds, finals, errorTexts, resultTexts}
	if slices.ContainsFunc(entries, func(e *string) bool { return e != nil }) {
		q, args = d.q.CompleteManyHistory, append(args, entries, keeps)
	}
	var done map[int64]bool
	err := sqldriver.RetryTransient(ctx, d.Transient, func() error {
		rows, err := d.Write.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		done, err = sqldriver.IDSet(rows, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs: %w", n, err)
	}
	var lost []int64
	for _, c := range cs {
		if !done[c.ID] {
			lost = append(lost, c.ID)
		}
	}
	return lost, nil
}
