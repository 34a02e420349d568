package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// The statements of the fair and limited claim are written with ?
// placeholders and a ListMarker for a list, on every database; Bind
// numbers them for the database.

// Scope names of sluice_claim_state rows.
const (
	// typesScope is locked by every claim that enforces a per-type cap
	// or rate: a type's jobs may sit in any queue, so those claims wait
	// for each other whatever their queue.
	typesScope = "types"
)

func queueScope(queue string) string { return "queue:" + queue }

// Bind expands the ListMarker in q to n placeholders and numbers every ? in
// order, so that one query text serves every database. The texts hold no
// other question marks.
func (b *Base) Bind(q string, n int) string {
	if n > 0 {
		q = List(q, 0, n, func(int) string { return "?" })
	}
	var sb strings.Builder
	i := 0
	for _, r := range q {
		if r == '?' {
			i++
			sb.WriteString(b.Placeholder(i))
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// candidate is a runnable job a fair or limited claim may take.
type candidate struct {
	id        int64
	typ, part string
}

// ClaimFair is the claim of a fair queue or one with limits (see
// driver.ClaimParams), run in tx, which holds no other work:
//
//  1. lock the queue's claim-state row (and the types row for per-type
//     caps or rates), so that claims enforcing the same caps count one at
//     a time;
//  2. count the running jobs each cap covers, one indexed count each, and
//     lock the rate buckets of the rated types (rates.go): a type's room
//     is the lesser of its cap's and its bucket's whole tokens;
//  3. fair: find up to driver.MaxFairPartitions partitions with pending
//     jobs, in byte order after the last one served, wrapping around once
//     (a recursive skip scan of sluice_jobs_fair, one seek per partition),
//     lock the rate buckets of those partitions if they are rated, share
//     the free slots between them in turns within each one's cap and
//     tokens, and read each one's first jobs in priority order (one UNION
//     ALL of per-partition LIMIT branches); otherwise read the queue's
//     first jobs in its global order, skipping types with no room;
//  4. take the candidates in turns, one per partition a round, within the
//     per-type room, claim them (Base.ClaimPicked, the one step that
//     differs by database), debit the rate buckets by the
//     jobs claimed (one statement), and record the last partition served.
//
// That is at most eleven statements without rates, each an index lookup or
// a range bounded by the claim's size, whatever the backlog. Rates add at
// most eight (a bucket lock, the database clock, a partition bucket lock
// and the debit; creating missing buckets and locking them again the first
// time), each bounded by the rated types or the claim's partitions.
func (b *Base) ClaimFair(ctx context.Context, tx *sql.Tx, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	lim := p.Limits
	if lim == nil {
		lim = &driver.RunningCaps{}
	}
	fair := p.Fair || lim.Partitioned()
	last, err := b.lockScope(ctx, tx, queueScope(p.Queue))
	if err != nil {
		return nil, err
	}
	if len(lim.Types) > 0 || len(lim.TypeRates) > 0 {
		if _, err := b.lockScope(ctx, tx, typesScope); err != nil {
			return nil, err
		}
	}
	free := p.Limit
	if lim.Queue > 0 {
		var running int
		if err := tx.QueryRowContext(ctx, b.Bind(b.Q.RunningQueue, 0), p.Queue).Scan(&running); err != nil {
			return nil, fmt.Errorf("count running jobs of the queue: %w", err)
		}
		free = min(free, lim.Queue-running)
	}
	var rates claimBuckets
	typeLeft, capped, err := b.typeRoom(ctx, tx, lim, &rates)
	if err != nil {
		return nil, err
	}
	if len(p.Types) > 0 && !slices.ContainsFunc(p.Types, func(t string) bool {
		n, ok := typeLeft[t]
		return !ok || n > 0
	}) {
		return nil, nil // every type asked for is out of room
	}
	if free <= 0 {
		return nil, nil
	}
	var cands [][]candidate // one list per partition, in turn order
	if fair {
		cands, err = b.fairCandidates(ctx, tx, p, lim, &rates, last, free, capped)
	} else {
		q, args := b.pickQuery(b.Q.ClaimPick, []any{p.Queue}, p.Types, capped, free)
		var c []candidate
		c, err = b.pick(ctx, tx, b.Bind(q, 0), args)
		// In global order every job is a turn of its own.
		for _, x := range c {
			cands = append(cands, []candidate{x})
		}
	}
	if err != nil {
		return nil, err
	}
	var ids []int64
	served := -1 // the partition of the last job taken, by index in cands
	for round := 0; len(ids) < free; round++ {
		took := false
		for i, c := range cands {
			if round >= len(c) || len(ids) >= free {
				continue
			}
			took = true
			x := c[round]
			if n, ok := typeLeft[x.typ]; ok {
				if n <= 0 {
					continue
				}
				typeLeft[x.typ] = n - 1
			}
			ids = append(ids, x.id)
			served = i
		}
		if !took {
			break
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	claim := b.ClaimPicked
	if claim == nil {
		claim = b.claimPickedReturning
	}
	jobs, err := claim(ctx, tx, p, ids)
	if err != nil {
		return nil, err
	}
	// Jobs start in turn order: the claim's statement may return them in
	// any order.
	pos := make(map[int64]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	slices.SortStableFunc(jobs, func(a, b sluicetype.JobRow) int { return pos[a.ID] - pos[b.ID] })
	if len(rates.held) > 0 {
		for _, j := range jobs {
			rates.take(driver.TypeBucket(j.Type))
			rates.take(driver.PartitionBucket(p.Queue, j.Partition))
		}
		if err := b.putBuckets(ctx, tx, &rates); err != nil {
			return nil, err
		}
	}
	if fair && len(jobs) > 0 {
		next := cands[served][0].part
		if _, err := tx.ExecContext(ctx, b.Bind(b.Q.ClaimStateSet, 0), next, queueScope(p.Queue)); err != nil {
			return nil, fmt.Errorf("record the last partition served: %w", err)
		}
	}
	return jobs, nil
}

// lockScope locks the scope's claim-state row, creating it first if
// needed, and returns its last partition served.
func (b *Base) lockScope(ctx context.Context, tx *sql.Tx, scope string) (string, error) {
	for range 2 {
		var last string
		err := tx.QueryRowContext(ctx, b.Bind(b.Q.ClaimStateLock, 0), scope).Scan(&last)
		if err == nil {
			return last, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("lock claim state %s: %w", scope, err)
		}
		if _, err := tx.ExecContext(ctx, b.Bind(b.Q.ClaimStateInit, 0), scope); err != nil {
			return "", fmt.Errorf("create claim state %s: %w", scope, err)
		}
	}
	return "", fmt.Errorf("lock claim state %s: row missing after creating it", scope)
}

// typeRoom returns how many more jobs of each capped or rated type may
// start, with the rated types' buckets locked in rates, and the types
// with no room left.
func (b *Base) typeRoom(ctx context.Context, tx *sql.Tx, lim *driver.RunningCaps, rates *claimBuckets) (map[string]int, []string, error) {
	if len(lim.Types) == 0 && len(lim.TypeRates) == 0 {
		return nil, nil, nil
	}
	left, err := b.typeCapRoom(ctx, tx, lim.Types)
	if err != nil {
		return nil, nil, err
	}
	want := make(map[string]driver.Rate, len(lim.TypeRates))
	for t, r := range lim.TypeRates {
		want[driver.TypeBucket(t)] = r
	}
	if err := b.lockBuckets(ctx, tx, rates, want); err != nil {
		return nil, nil, err
	}
	for t := range lim.TypeRates {
		n, _ := rates.room(driver.TypeBucket(t))
		if c, ok := left[t]; ok {
			n = min(n, c)
		}
		left[t] = n
	}
	var capped []string
	for t, n := range left {
		if n <= 0 {
			capped = append(capped, t)
		}
	}
	return left, capped, nil
}

// typeCapRoom returns how many more jobs of each capped type may run.
func (b *Base) typeCapRoom(ctx context.Context, tx *sql.Tx, caps map[string]int) (map[string]int, error) {
	left := make(map[string]int, len(caps))
	if len(caps) == 0 {
		return left, nil
	}
	args := make([]any, 0, len(caps))
	for t, n := range caps {
		left[t] = n
		args = append(args, t)
	}
	running, err := QueryMap[string, int](ctx, tx, "count running jobs by type", b.Bind(b.Q.RunningTypes, len(args)), args)
	if err != nil {
		return nil, err
	}
	for t, n := range running {
		left[t] -= n
	}
	return left, nil
}

// fairCandidates returns, per partition in turn order, the jobs a fair
// claim of free slots may take.
func (b *Base) fairCandidates(ctx context.Context, tx *sql.Tx, p driver.ClaimParams, lim *driver.RunningCaps, rates *claimBuckets, last string, free int, capped []string) ([][]candidate, error) {
	parts, err := b.partitions(ctx, tx, b.Q.FairParts, p.Queue, last, driver.MaxFairPartitions)
	if err != nil {
		return nil, err
	}
	if len(parts) < driver.MaxFairPartitions {
		// Wrap around to the partitions up to the last one served, which
		// has its turn again at the end.
		more, err := b.partitions(ctx, tx, b.Q.FairPartsFirst, p.Queue, "", driver.MaxFairPartitions-len(parts))
		if err != nil {
			return nil, err
		}
		for _, pt := range more {
			if pt > last {
				break
			}
			parts = append(parts, pt)
		}
	}
	room := make([]int, len(parts))
	for i := range room {
		room[i] = free
	}
	if lim.Partition > 0 || len(lim.Partitions) > 0 {
		running, err := b.runningParts(ctx, tx, p.Queue, parts)
		if err != nil {
			return nil, err
		}
		for i, pt := range parts {
			if c := lim.PartitionCap(pt); c > 0 {
				room[i] = c - running[pt]
			}
		}
	}
	if lim.PartitionRate.PerSecond > 0 || len(lim.PartitionRates) > 0 {
		want := map[string]driver.Rate{}
		for _, pt := range parts {
			if r := lim.PartitionRateOf(pt); r.PerSecond > 0 {
				want[driver.PartitionBucket(p.Queue, pt)] = r
			}
		}
		if err := b.lockBuckets(ctx, tx, rates, want); err != nil {
			return nil, err
		}
		for i, pt := range parts {
			if n, ok := rates.room(driver.PartitionBucket(p.Queue, pt)); ok {
				room[i] = min(room[i], n)
			}
		}
	}
	// Share the free slots in turns, one per partition a round.
	share := make([]int, len(parts))
	for given := 0; given < free; {
		gave := false
		for i := range parts {
			if given < free && share[i] < room[i] {
				share[i]++
				given++
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	// One statement reads every partition's share: a UNION ALL of one
	// LIMIT branch per partition, each an index range of sluice_jobs_fair.
	// A branch reads up to twice its share (within the cap), so that the
	// turns can fill the slots of a partition that has fewer jobs (or
	// fewer of the claim's type) than its share.
	var branches []string
	var args []any
	for i, pt := range parts {
		if share[i] > 0 {
			q, a := b.pickQuery(b.Q.ClaimPickPart, []any{p.Queue, pt}, p.Types, capped, min(room[i], 2*share[i]))
			branches, args = append(branches, q), append(args, a...)
		}
	}
	if len(branches) == 0 {
		return nil, nil
	}
	c, err := b.pick(ctx, tx, b.Bind(strings.Join(branches, "\nUNION ALL\n"), 0), args)
	if err != nil {
		return nil, err
	}
	// Rows come grouped by branch, each branch in claim order.
	var out [][]candidate
	for i, x := range c {
		if i == 0 || x.part != c[i-1].part {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], x)
	}
	return out, nil
}

// partitions runs a skip scan (FairParts or FairPartsFirst) for up to n
// partitions of queue with pending jobs after last.
func (b *Base) partitions(ctx context.Context, tx *sql.Tx, q, queue, last string, n int) ([]string, error) {
	args := []any{queue, last, queue, n}
	if q == b.Q.FairPartsFirst {
		args = []any{queue, queue, n} // it starts at the first partition
	}
	return QueryAll(ctx, tx, "find partitions with pending jobs", b.Bind(q, 0), args, func(rows *sql.Rows) (string, error) {
		var pt string
		err := rows.Scan(&pt)
		return pt, err
	})
}

// runningParts counts the running jobs of each of parts in queue.
func (b *Base) runningParts(ctx context.Context, tx *sql.Tx, queue string, parts []string) (map[string]int, error) {
	out := map[string]int{}
	if len(parts) == 0 {
		return out, nil
	}
	args := append(make([]any, 0, len(parts)+1), queue)
	for _, pt := range parts {
		args = append(args, pt)
	}
	return QueryMap[string, int](ctx, tx, "count running jobs by partition", b.Bind(b.Q.RunningParts, len(parts)), args)
}

// pickQuery fills the template q (ClaimPick or ClaimPickPart, whose
// leading arguments are args) for up to n jobs of typ if set and of no
// type in capped. Its ? are left for Bind.
//
// Each /*FILTER*/ marker ends the WHERE of one branch, whose arguments are
// args, the filter's and n, in that order. A template of several branches
// (ClaimPick on PostgreSQL and SQLite merges two indexes) repeats them per
// branch and ends with a LIMIT of its own, n again.
func (b *Base) pickQuery(q string, args []any, types, capped []string, n int) (string, []any) {
	var filter strings.Builder
	if len(types) > 0 {
		filter.WriteString(" AND type IN (" + strings.TrimSuffix(strings.Repeat("?,", len(types)), ",") + ")")
		args = append(args, Args(types)...)
	}
	if len(capped) > 0 {
		filter.WriteString(" AND type NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(capped)), ",") + ")")
		for _, t := range capped {
			args = append(args, t)
		}
	}
	branch := append(args, n)
	all := slices.Repeat(branch, strings.Count(q, "/*FILTER*/"))
	if len(all) > len(branch) {
		all = append(all, n)
	}
	return strings.ReplaceAll(q, "/*FILTER*/", filter.String()), all
}

// pick runs a bound pick query.
func (b *Base) pick(ctx context.Context, tx *sql.Tx, q string, args []any) ([]candidate, error) {
	return QueryAll(ctx, tx, "pick jobs", q, args, func(rows *sql.Rows) (candidate, error) {
		var c candidate
		err := rows.Scan(&c.id, &c.typ, &c.part)
		return c, err
	})
}

// ClaimFairInTx is ClaimFair in a transaction of its own, as SQLite and
// PostgreSQL run it (MySQL runs it in its claim transaction).
func (b *Base) ClaimFairInTx(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	var jobs []sluicetype.JobRow
	err := b.InTx(ctx, nil, func(tx *sql.Tx) (err error) {
		jobs, err = b.ClaimFair(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", p.Queue, err)
	}
	return jobs, nil
}

// claimPickedReturning is ClaimPicked where the database has UPDATE ...
// RETURNING.
func (b *Base) claimPickedReturning(ctx context.Context, tx *sql.Tx, p driver.ClaimParams, ids []int64) ([]sluicetype.JobRow, error) {
	args := append(make([]any, 0, len(ids)+2), p.Token, b.Duration(p.Lease))
	for _, id := range ids {
		args = append(args, id)
	}
	jobs, err := QueryJobs(ctx, tx, b.Bind(b.Q.ClaimIDs, len(ids)), args...)
	if err != nil {
		return nil, fmt.Errorf("claim picked jobs: %w", err)
	}
	return jobs, nil
}

// PartitionStats is driver.Driver's PartitionStats.
func (b *Base) PartitionStats(ctx context.Context, p driver.PartitionStatsParams) ([]sluicetype.PartitionStats, error) {
	return QueryAll(ctx, b.Read, "partition stats", b.Bind(b.Q.PartitionStats, 0), []any{p.Limit}, func(rows *sql.Rows) (sluicetype.PartitionStats, error) {
		var s sluicetype.PartitionStats
		err := rows.Scan(&s.Queue, &s.Partition, &s.Pending, &s.Running)
		return s, err
	})
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
