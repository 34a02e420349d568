package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Statements are cut into chunks of at most this many rows and roughly this
// many bytes of arguments, well under max_allowed_packet (16 MiB on MariaDB).
const (
	insertChunkRows   = 1000
	completeChunkRows = 500
	chunkBytes        = 1 << 20
)

// chunks cuts n items into [start, end) runs of at most maxRows items and,
// past the first item of a run, at most chunkBytes as measured by size.
func chunks(n, maxRows int, size func(i int) int) [][2]int {
	var out [][2]int
	for start := 0; start < n; {
		end, bytes := start, 0
		for end < n && end-start < maxRows {
			bytes += size(end)
			if end > start && bytes > chunkBytes {
				break
			}
			end++
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// Insert adds jobs with their keys taken in one global order (see
// sqldriver.Insert), so that overlapping batches cannot deadlock.
func (d *Driver) Insert(ctx context.Context, p driver.InsertParams) ([]driver.InsertResult, error) {
	return sqldriver.Insert(ctx, p, d.insertAll)
}

// insertAll adds jobs in one transaction: the caller's, or its own retried on
// deadlock. Keys already held are found with one query, the remaining rows
// go in with multi-row INSERTs, and a key taken meanwhile by a concurrent
// enqueue sends its chunk down a row-by-row path that tells which rows lost.
func (d *Driver) insertAll(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	var out []driver.InsertResult
	err := d.InTx(ctx, tx, func(tx *sql.Tx) (err error) {
		out, err = d.insert(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return out, nil
}

func (d *Driver) insert(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob) ([]driver.InsertResult, error) {
	out := make([]driver.InsertResult, len(jobs))
	// Within the batch the first occurrence of a key wins.
	first := map[string]int{}
	var keys []string
	for i, j := range jobs {
		if j.Key == "" {
			continue
		}
		if _, seen := first[j.Key]; !seen {
			first[j.Key] = i
			keys = append(keys, j.Key)
		}
	}
	held, err := d.keyHolders(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	var keyed, keyless []int
	for i, j := range jobs {
		switch id, taken := held[j.Key]; {
		case j.Key == "":
			keyless = append(keyless, i)
		case taken:
			out[i] = driver.InsertResult{ID: id, Duplicate: true}
		case first[j.Key] == i:
			keyed = append(keyed, i)
		}
	}
	// Keyless rows go first and in statements of their own. Their NULL
	// keys sit at the low end of the unique key index, in the gap that a
	// duplicate-key check on the lowest key locks; inserted after our keyed
	// rows, or again in the row-by-row path that follows a duplicate, they
	// would wait on a writer that waits on us, a deadlock that the key
	// order cannot prevent.
	if d.consecutiveIDs {
		if err := d.insertChunks(ctx, tx, jobs, keyless, out, false); err != nil {
			return nil, err
		}
		if err := d.insertChunks(ctx, tx, jobs, keyed, out, false); err != nil {
			return nil, err
		}
	} else {
		// With interleaved auto-increment (lock mode 2) a multi-row INSERT
		// gets no usable id range: keyless rows go in one statement each,
		// and keyed rows are found again by key.
		if err := d.insertEach(ctx, tx, jobs, keyless, out); err != nil {
			return nil, err
		}
		if err := d.insertChunks(ctx, tx, jobs, keyed, out, true); err != nil {
			return nil, err
		}
	}
	for i, j := range jobs {
		if f, ok := first[j.Key]; ok && f != i && !out[i].Duplicate {
			out[i] = driver.InsertResult{ID: out[f].ID, Duplicate: true}
		}
	}
	return out, nil
}

// keyHolders maps each of keys that is taken to the id of the row holding it.
func (d *Driver) keyHolders(ctx context.Context, q driver.Querier, keys []string) (map[string]int64, error) {
	held := map[string]int64{}
	for _, c := range chunks(len(keys), insertChunkRows, func(i int) int { return len(keys[i]) }) {
		part := keys[c[0]:c[1]]
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = k
		}
		found, err := sqldriver.QueryMap[string, int64](ctx, q, "find key holders", d.InList(d.q.KeyHolders, 1, len(part)), args)
		if err != nil {
			return nil, err
		}
		maps.Copy(held, found)
	}
	return held, nil
}

// insertArgs are the arguments of Insert for one job, in its order.
func (d *Driver) insertArgs(j driver.InsertJob) []any {
	var runAt any
	if !j.RunAt.IsZero() {
		runAt = d.Time(j.RunAt)
	}
	// A string, not []byte: MySQL refuses to build a JSON value from a
	// binary string, which is what the driver makes of []byte.
	var deadline, deadlineAfter any
	if !j.Deadline.IsZero() {
		deadline = d.Time(j.Deadline)
	}
	if j.DeadlineAfter > 0 {
		deadlineAfter = d.Duration(j.DeadlineAfter)
	}
	return []any{j.Queue, j.Type, sqldriver.NullString(j.Key), j.Dedupe, string(j.Payload),
		j.Priority, j.MaxAttempts, runAt, d.Duration(j.Delay), sqldriver.NullString(j.TraceParent), j.Partition,
		deadline, runAt, d.Duration(j.Delay), deadlineAfter, sqldriver.NullMicros(j.ProgressTimeout)}
}

func jobSize(j driver.InsertJob) int {
	return len(j.Payload) + len(j.Key) + len(j.Queue) + len(j.Type) + len(j.TraceParent) + 100
}

// insertChunks inserts jobs[idx] with multi-row INSERTs and records their
// ids in out. byKey reads the ids back by key (every row in idx has one);
// otherwise they are the consecutive range starting at LAST_INSERT_ID().
func (d *Driver) insertChunks(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob, idx []int, out []driver.InsertResult, byKey bool) error {
	head, tuple, _ := strings.Cut(d.q.Insert, "VALUES")
	for _, c := range chunks(len(idx), insertChunkRows, func(i int) int { return jobSize(jobs[idx[i]]) }) {
		part := idx[c[0]:c[1]]
		var sb strings.Builder
		sb.WriteString(head)
		sb.WriteString("VALUES")
		args := make([]any, 0, len(part)*10)
		for n, i := range part {
			if n > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(tuple)
			args = append(args, d.insertArgs(jobs[i])...)
		}
		res, err := tx.ExecContext(ctx, sb.String(), args...)
		if isUnique(err) {
			// A concurrent enqueue took one of the keys after keyHolders
			// looked; the failed statement changed nothing.
			if err := d.insertEach(ctx, tx, jobs, part, out); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(part), err)
		}
		if byKey {
			if err := d.idsByKey(ctx, tx, jobs, part, out); err != nil {
				return err
			}
			continue
		}
		firstID, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(part), err)
		}
		for n, i := range part {
			out[i].ID = firstID + int64(n)*d.idStep
		}
	}
	return nil
}

// idsByKey records the ids of the just-inserted keyed jobs[part].
func (d *Driver) idsByKey(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob, part []int, out []driver.InsertResult) error {
	keys := make([]string, len(part))
	for n, i := range part {
		keys[n] = jobs[i].Key
	}
	ids, err := d.keyHolders(ctx, tx, keys)
	if err != nil {
		return err
	}
	for _, i := range part {
		id, ok := ids[jobs[i].Key]
		if !ok {
			return fmt.Errorf("inserted job with key %q is not found by its key", jobs[i].Key)
		}
		out[i].ID = id
	}
	return nil
}

// insertEach inserts jobs[idx] one prepared statement each, so that every id
// is exact and a taken key is resolved to its holder row by row.
func (d *Driver) insertEach(ctx context.Context, tx *sql.Tx, jobs []driver.InsertJob, idx []int, out []driver.InsertResult) error {
	if len(idx) == 0 {
		return nil
	}
	ins, err := tx.PrepareContext(ctx, d.q.Insert)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	defer ins.Close()
	for _, i := range idx {
		if out[i], err = d.insertOne(ctx, tx, ins, jobs[i]); err != nil {
			return fmt.Errorf("%s: %w", sqldriver.RowName(i, jobs[i]), err)
		}
	}
	return nil
}

// insertOne inserts j or, if its key is taken, returns the holder. The
// holder is read with a locking read, which sees the latest committed row
// even from a REPEATABLE READ snapshot; should it vanish in between (rolled
// back, or an active-mode job that finished), the insert is tried again.
func (d *Driver) insertOne(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, j driver.InsertJob) (driver.InsertResult, error) {
	const tries = 5
	for range tries {
		res, err := ins.ExecContext(ctx, d.insertArgs(j)...)
		if err == nil {
			id, err := res.LastInsertId()
			return driver.InsertResult{ID: id}, err
		}
		if !isUnique(err) || j.Key == "" {
			return driver.InsertResult{}, err
		}
		var id int64
		err = tx.QueryRowContext(ctx, d.q.KeyHolderLocked, j.Key).Scan(&id)
		if err == nil {
			return driver.InsertResult{ID: id, Duplicate: true}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return driver.InsertResult{}, fmt.Errorf("find holder of key %q: %w", j.Key, err)
		}
	}
	return driver.InsertResult{}, fmt.Errorf("key %q: its holder kept changing over %d tries", j.Key, tries)
}

// Complete applies a batch of fenced outcomes with one multi-table UPDATE
// per chunk. When it matches fewer rows than the chunk, some leases were
// lost: the statement is rolled back and the chunk replayed one fenced
// statement per row, which tells which ones. Outcomes with a log are
// applied first, in a transaction that writes their logs too
// (sqldriver.CompleteLogged).
func (d *Driver) Complete(ctx context.Context, p driver.CompleteParams) ([]int64, error) {
	cs, logged := sqldriver.SplitLogged(p.Completions)
	lost, err := d.CompleteLogged(ctx, logged)
	if err != nil {
		return nil, err
	}
	size := func(i int) int { return completionSize(cs[i]) }
	for _, c := range chunks(len(cs), completeChunkRows, size) {
		l, err := d.completeChunk(ctx, cs[c[0]:c[1]])
		if err != nil {
			return lost, err
		}
		lost = append(lost, l...)
	}
	return lost, nil
}

func completionSize(c driver.Completion) int {
	n := len(c.Token) + 64
	if c.Error != nil {
		n += min(len(*c.Error), sluicetype.MaxErrorLen)
	}
	if c.Result != nil {
		n += min(len(*c.Result), sluicetype.MaxResultLen)
	}
	if c.Attempt != nil {
		n += min(len(c.Attempt.Error), driver.MaxAttemptErrorLen) + 128
	}
	return n
}

// completeManyQuery builds the one UPDATE that writes several outcomes:
// the outcomes as a derived table, joined to the jobs by primary key. The
// join order and the index are forced, so that the statement reads, and
// locks, only the jobs it writes whatever the table's statistics say: a
// claim running meanwhile skips every row it has locked.
func (d *Driver) completeManyQuery(cs []driver.Completion) (string, []any) {
	// Only a batch with a history entry pays for the history column.
	batch, firstRow, rowArgs := d.q.CompleteMany, d.q.CompleteManyFirst, d.ManyRowArgs
	if slices.ContainsFunc(cs, func(c driver.Completion) bool { return c.Attempt != nil }) {
		batch, firstRow, rowArgs = d.q.CompleteManyHistory, d.q.CompleteManyHistoryFirst, d.ManyHistoryRowArgs
	}
	nextRow := " UNION ALL SELECT ?" + strings.Repeat(", ?", strings.Count(firstRow, "?")-1)
	var sb strings.Builder
	var args []any
	for i, c := range cs {
		if i == 0 {
			sb.WriteString(firstRow)
		} else {
			sb.WriteString(nextRow)
		}
		args = append(args, rowArgs(c)...)
	}
	return strings.Replace(batch, "/*ROWS*/", sb.String(), 1), args
}

func (d *Driver) completeChunk(ctx context.Context, cs []driver.Completion) ([]int64, error) {
	if len(cs) == 1 {
		return d.completeOne(ctx, cs[0])
	}
	q, args := d.completeManyQuery(cs)
	applied := false
	err := sqldriver.RetryTransient(ctx, d.Transient, func() error {
		tx, err := d.Write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if applied = n == int64(len(cs)); !applied {
			return nil
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs: %w", len(cs), err)
	}
	if applied {
		return nil, nil
	}
	return d.CompleteEach(ctx, cs)
}

// completeOne needs no transaction: one fenced statement says by itself
// whether the lease was still held.
func (d *Driver) completeOne(ctx context.Context, c driver.Completion) ([]int64, error) {
	n, err := d.ExecCount(ctx, d.q.Complete, d.CompletionArgs(c)...)
	if err != nil {
		return nil, fmt.Errorf("complete job %d: %w", c.ID, err)
	}
	if n == 0 {
		return []int64{c.ID}, nil
	}
	return nil, nil
}

// Rescue returns expired leases to pending, or fails jobs out of attempts.
// MySQL has no UPDATE ... RETURNING, so the two outcomes are separate: the
// jobs to fail are locked and read (for their queue and type) and failed
// by id, then one statement returns the others to pending. They need no
// common transaction: a row is moved by one or the other.
func (d *Driver) Rescue(ctx context.Context, p driver.RescueParams) (sluicetype.RescueResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	keep := driver.KeepAttempts(p.KeepAttempts)
	r, err := d.rescueFailed(ctx, limit, keep)
	if err != nil {
		return r, fmt.Errorf("rescue expired leases: %w", err)
	}
	if remaining := limit - r.Failed; remaining > 0 {
		pending, err := d.ExecCount(ctx, d.q.Rescue, keep, keep, remaining)
		if err != nil {
			return r, fmt.Errorf("rescue expired leases: %w", err)
		}
		r.Pending = int(pending)
	}
	return r, nil
}

// rescueFailed fails up to limit jobs whose lease expired on their last
// attempt, in one transaction that locks them first.
func (d *Driver) rescueFailed(ctx context.Context, limit, keep int) (sluicetype.RescueResult, error) {
	var r sluicetype.RescueResult
	err := sqldriver.RetryTransient(ctx, d.Transient, func() error {
		r = sluicetype.RescueResult{}
		tx, err := d.Write.BeginTx(ctx, claimTx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, d.q.RescueFailedLock, limit)
		if err != nil {
			return err
		}
		var ids []any
		var jobs []sluicetype.QueueType
		err = sqldriver.EachRow(rows, func(rows *sql.Rows) error {
			var id int64
			var k sluicetype.QueueType
			err := rows.Scan(&id, &k.Queue, &k.Type)
			ids = append(ids, id)
			jobs = append(jobs, k)
			return err
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		args := append([]any{keep, keep}, ids...)
		if _, err := tx.ExecContext(ctx, d.InList(d.q.RescueFailed, 3, len(ids)), args...); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		for _, k := range jobs {
			r.CountRescued(sluicetype.StatusFailed, k.Queue, k.Type)
		}
		return nil
	})
	return r, err
}
