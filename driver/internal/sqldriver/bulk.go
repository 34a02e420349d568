package sqldriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// filter is the WHERE clause of a listing or a bulk selection, with its
// arguments, numbered from the first placeholder.
type filter struct {
	b     *Base
	where []string
	args  []any
}

// add adds cond, whose ? stand for vs in order.
func (f *filter) add(cond string, vs ...any) {
	var sb strings.Builder
	for i, part := range strings.SplitN(cond, "?", len(vs)+1) {
		if i > 0 {
			f.args = append(f.args, vs[i-1])
			sb.WriteString(f.b.Placeholder(len(f.args)))
		}
		sb.WriteString(part)
	}
	f.where = append(f.where, sb.String())
}

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.where, " AND ")
}

// statusCond matches one status or a set. Statuses from the fixed set are
// literals, not parameters: SQLite and a generic PostgreSQL plan only use a
// partial index (such as the finished-rows-by-status ones) whose predicate
// they can see.
func (f *filter) statuses(ss []sluicetype.Status) {
	var lits []string
	for _, s := range ss {
		if !s.Valid() {
			f.add("status = ?", string(s))
			return
		}
		lits = append(lits, "'"+string(s)+"'")
	}
	if len(lits) == 1 {
		f.where = append(f.where, "status = "+lits[0])
	} else {
		f.where = append(f.where, "status IN ("+strings.Join(lits, ", ")+")")
	}
}

// listFilter is p's filter without the payload part, which needs the
// bounded scan of payloadScan.
func (b *Base) listFilter(p sluicetype.ListParams, statuses []sluicetype.Status, args []any) *filter {
	f := &filter{b: b, args: args}
	if len(statuses) > 0 {
		f.statuses(statuses)
	}
	if p.Queue != "" {
		f.add("queue = ?", p.Queue)
	}
	if p.Type != "" {
		f.add("type = ?", p.Type)
	}
	if p.KeyPrefix != "" {
		// The range form uses the key index; LIKE would need escaping and
		// a collation that suits it.
		f.add("business_key >= ? AND business_key < ?", p.KeyPrefix, p.KeyPrefix+"\U0010FFFF")
	}
	return f
}

// addPayload adds the payload filter of p to f. ListPayload takes the
// field for every parameter but the last.
func (b *Base) addPayload(f *filter, p sluicetype.ListParams) {
	frag := b.Q.ListPayload
	n := strings.Count(frag, "?")
	vs := make([]any, 0, n)
	for range n - 1 {
		vs = append(vs, p.PayloadField)
	}
	f.add(frag, append(vs, p.PayloadValue)...)
}

// payloadScan wraps a query of columns cols, ordered newest first, so that
// only its first PayloadScan rows are tested against the payload filter.
func (b *Base) payloadScan(f *filter, inner, cols string, p sluicetype.ListParams) string {
	pf := &filter{b: b, args: f.args}
	b.addPayload(pf, p)
	f.args = pf.args
	return "SELECT " + cols + " FROM (" + inner + " ORDER BY id DESC LIMIT " + strconv.Itoa(sluicetype.PayloadScan) + ") s" + pf.sql()
}

// ListQuery builds the listing's SQL and arguments.
func (b *Base) ListQuery(p sluicetype.ListParams) (string, []any) {
	var ss []sluicetype.Status
	if p.Status != "" {
		ss = []sluicetype.Status{p.Status}
	}
	f := b.listFilter(p, ss, nil)
	if p.AfterID > 0 {
		f.add("id < ?", p.AfterID)
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	from := b.Q.List
	if p.Status != "" && p.Type == "" && p.Queue == "" && p.KeyPrefix == "" {
		// Only a status and the page: the (status, id) index serves both,
		// and MySQL's ListStatus says so (see its comment).
		from = b.Q.ListStatus
	}
	q := from + f.sql()
	if p.PayloadField != "" {
		q = b.payloadScan(f, q, "*", p)
	}
	return q + " ORDER BY id DESC LIMIT " + strconv.Itoa(limit), f.args
}

// bulkQueries selects, per status the action applies to, the ids of p's
// jobs below before (0: none), newest first, at most limit; none when p's
// status filter excludes every status the action applies to. Each status
// is its own query, merged by bulkIDs, so that each walks its own status
// index newest first and stops at the LIMIT (SQLite uses a partial index
// only for the one status its WHERE names, and neither SQLite nor MariaDB
// stops early in a UNION): a count of the few failed jobs among a million
// finished ones reads only those. A payload filter scans the newest
// PayloadScan jobs of each status.
func (b *Base) bulkQueries(p driver.BulkParams, before int64, limit int) ([]string, [][]any, error) {
	ss, known := sluicetype.BulkStatuses[p.Action]
	if !known {
		return nil, nil, fmt.Errorf("bulk action %q: want retry, cancel or delete", p.Action)
	}
	if p.Filter.Status != "" {
		if !slices.Contains(ss, p.Filter.Status) {
			return nil, nil, nil
		}
		ss = []sluicetype.Status{p.Filter.Status}
	}
	lim := " ORDER BY id DESC LIMIT " + strconv.Itoa(limit)
	var qs []string
	var args [][]any
	for _, st := range ss {
		f := b.listFilter(sluicetype.ListParams{}, []sluicetype.Status{st}, nil)
		if p.UpTo > 0 {
			f.add("id <= ?", p.UpTo)
		}
		if before > 0 {
			f.add("id < ?", before)
		}
		pf := p.Filter
		if pf.Type == "" && pf.Queue == "" && pf.KeyPrefix == "" && pf.PayloadField == "" {
			qs = append(qs, b.Q.ListIDs+f.sql()+lim)
			args = append(args, f.args)
			continue
		}
		// No index serves a status with these filters: read the newest
		// BulkScan jobs of the status (its index, newest first) and filter
		// those, so that a filter matching few of many rows stays bounded.
		inner := b.Q.ListStatus + f.sql() + " ORDER BY id DESC LIMIT " + strconv.Itoa(sluicetype.BulkScan)
		outer := b.listFilter(sluicetype.ListParams{Type: pf.Type, Queue: pf.Queue, KeyPrefix: pf.KeyPrefix}, nil, f.args)
		if pf.PayloadField != "" {
			b.addPayload(outer, pf)
		}
		qs = append(qs, "SELECT id FROM ("+inner+") w"+outer.sql()+lim)
		args = append(args, outer.args)
	}
	return qs, args, nil
}

// BulkQueries are the selections of a bulk action's count, for the
// conformance suite's plan checks.
func (b *Base) BulkQueries(p driver.BulkParams) ([]string, [][]any, error) {
	return b.bulkQueries(p, 0, sluicetype.MaxBulk+1)
}

// bulkIDs runs the selections and keeps the newest limit ids of them all.
func (b *Base) bulkIDs(ctx context.Context, p driver.BulkParams, before int64, limit int) ([]int64, error) {
	qs, args, err := b.bulkQueries(p, before, limit)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for i, q := range qs {
		part, err := b.queryIDs(ctx, q, args[i])
		if err != nil {
			return nil, err
		}
		ids = append(ids, part...)
	}
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(b, a) })
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}

// CountBulk counts the jobs Bulk would change, reading at most MaxBulk+1
// per status.
func (b *Base) CountBulk(ctx context.Context, p driver.BulkParams) (sluicetype.BulkCount, error) {
	ids, err := b.bulkIDs(ctx, p, 0, sluicetype.MaxBulk+1)
	if err != nil {
		return sluicetype.BulkCount{}, fmt.Errorf("count jobs to %s: %w", p.Action, err)
	}
	c := sluicetype.BulkCount{Count: int64(len(ids))}
	if c.Count > sluicetype.MaxBulk {
		c.Count, c.Capped = sluicetype.MaxBulk, true
	}
	if len(ids) > 0 {
		c.UpTo = ids[0]
	}
	return c, nil
}

// bulkChunk is the ids one statement of a bulk action changes.
const bulkChunk = 500

// Bulk applies p.Action to the selected jobs: the same selection as
// CountBulk's (so, with p.UpTo from the count, the jobs counted), in chunks
// of ids, each its own statement: an action on many jobs never holds one
// long transaction, and each statement re-checks the status, so a job
// claimed since it was selected is skipped.
func (b *Base) Bulk(ctx context.Context, p driver.BulkParams) (int64, error) {
	ids, err := b.bulkIDs(ctx, p, 0, sluicetype.MaxBulk)
	if err != nil {
		return 0, fmt.Errorf("%s jobs: %w", p.Action, err)
	}
	var total int64
	for chunk := range slices.Chunk(ids, bulkChunk) {
		n, err := b.bulkChunk(ctx, p.Action, chunk)
		total += n
		if err != nil {
			return total, fmt.Errorf("%s jobs: %w", p.Action, err)
		}
	}
	return total, nil
}

func (b *Base) queryIDs(ctx context.Context, q string, args []any) ([]int64, error) {
	rows, err := b.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return ScanAll(rows, ScanID)
}

func (b *Base) bulkChunk(ctx context.Context, action string, ids []int64) (int64, error) {
	q := map[string]string{sluicetype.BulkRetry: b.Q.Retry, sluicetype.BulkCancel: b.Q.Cancel, sluicetype.BulkDelete: b.Q.Delete}[action]
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	n, err := b.ExecCount(ctx, b.InList(q, 1, len(ids)), args...)
	if err == nil || action != sluicetype.BulkRetry || !b.UniqueViolation(err) {
		return n, err
	}
	// A job whose business key another active job holds cannot be retried;
	// the chunk goes again one job at a time so that only those are skipped.
	n = 0
	for _, id := range ids {
		switch err := b.retryOne(ctx, id); {
		case err == nil:
			n++
		case errors.Is(err, sluicetype.ErrKeyTaken), errors.Is(err, sluicetype.ErrWrongState), errors.Is(err, sluicetype.ErrNotFound):
		default:
			return n, err
		}
	}
	return n, nil
}
