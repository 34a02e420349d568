// Package driver is sluice's storage interface, and it is public in the way
// database/sql/driver is: a Client runs on a Driver (sluice.Config.Driver),
// and support for another database would be a third-party implementation of
// Driver. What its methods read and write, the jobs, their states and the
// statistics, is the public model in package sluicetype, which the root
// API returns too; this package adds only the interface and the ...Params
// structs of its methods. The
// databases sluice ships live in sub-packages (sqlite, mysql, postgres), and
// driver/drivertest is the conformance suite each of them runs; a
// third-party driver should run it too.
//
// Compatibility: the package is documented and supported, but it is a
// lower-level contract than the root package, which is what applications
// that enqueue and run jobs should use. A patch release does not change
// it. A minor release may add methods to Driver (a third-party driver must
// then add them; drivertest says what they must do) and fields to the params
// structs, whose zero value keeps the earlier behaviour. sluice is not at v1
// yet, so changing or removing an existing method is avoided but not ruled
// out.
//
// Every method that reads or writes the database takes ctx and at most one
// more argument, so that a new input is a new field rather than a new
// signature: a params struct of its own, named ...Params (Insert takes
// InsertParams; ListJobs takes sluicetype.ListParams, the job filter that
// the root API takes too), in which a caller's transaction, where the method
// accepts one, is the Tx field. The exceptions are the methods
// that act on one row named by its id, which take the id alone (GetJob,
// Cancel, DeleteNode), and UpsertNode, which takes the Node row it writes.
// Methods with no input take ctx only; Listener.Listen takes the callbacks
// it reports to.
package driver

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// MigrateResult is what Migrate did: the schema version it found and the
// one it left, equal when there was nothing to do.
type MigrateResult struct {
	From, To int
}

// Querier is what *sql.DB, *sql.Tx and *sql.Conn have in common.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Driver is one database's implementation of sluice's storage.
type Driver interface {
	// Name is "sqlite", "mysql" or "postgres".
	Name() string
	// DB is the pool that callers use for their own transactions (EnqueueTx,
	// transactional completion). On SQLite it is the single writer connection.
	DB() *sql.DB
	Close() error

	// Migrate creates or upgrades the schema. The version it reports
	// having found is read under the migration lock, so of several
	// processes migrating one database at once exactly one reports the
	// upgrade and the others find the schema current.
	Migrate(ctx context.Context) (MigrateResult, error)
	// SchemaVersion returns the schema version in the database and the newest
	// version this driver knows.
	SchemaVersion(ctx context.Context) (current, latest int, err error)
	// Now is the database clock, the only clock sluice trusts.
	Now(ctx context.Context) (time.Time, error)

	// Insert adds p.Jobs, deduplicated by business key. With p.Tx nil the
	// driver uses its own transaction; either way all rows are inserted or
	// none. Results are in the order of p.Jobs. Batches that share keys in
	// any order must not deadlock each other, in a caller's tx or not.
	Insert(ctx context.Context, p InsertParams) ([]InsertResult, error)
	// Claim moves up to Limit runnable pending jobs to processing under a fresh lease.
	Claim(ctx context.Context, p ClaimParams) ([]sluicetype.JobRow, error)
	// ReleaseClaim returns the jobs still processing under p.Token to
	// pending and gives their attempt back, and reports how many it
	// returned. A worker calls it for a claim whose reply it never got: the
	// claim may have committed, but its jobs were never delivered, so they
	// never ran and must not wait for their lease to expire.
	ReleaseClaim(ctx context.Context, p ReleaseClaimParams) (int64, error)
	// Prefetched marks jobs of a claim held under p.Token that the worker
	// has not started (it claimed them ahead of a free handler): if the
	// worker dies before one starts, the rescue gives its attempt back
	// instead of charging a run that never began.
	Prefetched(ctx context.Context, p PrefetchedParams) error
	// Started records that a job marked by Prefetched begins its run: from
	// then on a rescue charges its attempt like any other. It reports
	// false when p.Token no longer holds the job, and when the job's
	// deadline passed while it waited, which cancels it (SweepDeadlines'
	// reason): no job starts past its deadline.
	Started(ctx context.Context, p StartedParams) (bool, error)
	// Heartbeat extends the leases of jobs still held with p.Token and
	// returns the ids whose lease was lost.
	Heartbeat(ctx context.Context, p HeartbeatParams) (lost []int64, err error)
	// Progress records what a running attempt reports on its job's row,
	// fenced like a completion: held is false, and nothing is written,
	// when p.Token no longer holds the job or it is no longer running.
	Progress(ctx context.Context, p ProgressParams) (held bool, err error)
	// Complete applies fenced outcomes and returns the ids whose lease was
	// lost; the logs (Completion.Log) of the applied ones are written in
	// the same transaction as their outcomes.
	Complete(ctx context.Context, p CompleteParams) (lost []int64, err error)
	// CompleteTx applies one fenced outcome inside the caller's transaction
	// p.Tx and reports whether the lease was still held; its log, if any,
	// is written in p.Tx too when it was.
	CompleteTx(ctx context.Context, p CompleteTxParams) (bool, error)
	// Rescue returns jobs with an expired lease to pending, or fails them
	// when their attempts are spent.
	Rescue(ctx context.Context, p RescueParams) (sluicetype.RescueResult, error)
	// SweepDeadlines moves up to p.Limit pending jobs whose deadline has
	// passed at the database to cancelled, each with the reason in its
	// last error and an entry in its history, and returns how many it
	// moved. Claims already skip such jobs; this makes their end visible.
	SweepDeadlines(ctx context.Context, p SweepDeadlinesParams) (int64, error)
	// Purge deletes up to Limit finished jobs in Status finished before OlderThan ago.
	Purge(ctx context.Context, p PurgeParams) (int64, error)

	GetJob(ctx context.Context, id int64) (*sluicetype.JobRow, error)
	ListJobs(ctx context.Context, p sluicetype.ListParams) ([]sluicetype.JobRow, error)
	// Retry moves failed or cancelled jobs back to pending with fresh attempts.
	Retry(ctx context.Context, p RetryParams) (int64, error)
	// Cancel moves a pending, failed or running job to cancelled and
	// reports whether it was running. A running job's attempt ends like a
	// completion, fenced by its lease token: of a cancel and the attempt's
	// own outcome, whichever is written first wins, and the other changes
	// nothing.
	Cancel(ctx context.Context, p CancelParams) (running bool, err error)
	// Cancelled returns the ids among ids whose job is cancelled: how a
	// worker learns that an attempt it runs was cancelled.
	Cancelled(ctx context.Context, ids []int64) ([]int64, error)
	// ProgressSeen returns, for the jobs among ids that have a progress
	// report (progress_at), when it was last written, on the database
	// clock. A worker compares each value only with the one it read
	// before, never with its own clock: a change means a report it did
	// not make itself (a webhook's, through any server) reset the job's
	// progress timeout.
	ProgressSeen(ctx context.Context, ids []int64) ([]ProgressMark, error)
	// CountBulk counts the jobs Bulk would change, reading at most
	// MaxBulk+1 ids.
	CountBulk(ctx context.Context, p BulkParams) (sluicetype.BulkCount, error)
	// Bulk applies p.Action to the selected jobs in chunks and returns how
	// many changed; a job whose status changed meanwhile, or whose retry
	// finds its business key taken, is skipped.
	Bulk(ctx context.Context, p BulkParams) (int64, error)
	Stats(ctx context.Context) ([]sluicetype.QueueStats, error)
	// PartitionStats returns, for every queue, the p.Limit partitions
	// with the most pending jobs, with their pending and running counts,
	// ordered by queue; jobs without a partition are left out. It is one
	// query however many queues there are, and reads live rows through
	// indexes, never finished ones.
	PartitionStats(ctx context.Context, p PartitionStatsParams) ([]sluicetype.PartitionStats, error)

	// SetQueuePaused records a queue's paused flag; PausedQueues reads all flags.
	SetQueuePaused(ctx context.Context, p SetQueuePausedParams) error
	PausedQueues(ctx context.Context) (map[string]bool, error)

	// ScheduleState reads a schedule's progress; Found is false for a new one.
	ScheduleState(ctx context.Context, p ScheduleStateParams) (sluicetype.ScheduleState, error)
	// InitSchedule records a new schedule as handled up to p.Last; it does
	// nothing if the schedule exists.
	InitSchedule(ctx context.Context, p InitScheduleParams) error
	// AdvanceSchedule moves a schedule on if its version is still
	// p.Version, and reports whether it did. Fired slots are counted
	// either way; skipped ones only when it did.
	AdvanceSchedule(ctx context.Context, p AdvanceScheduleParams) (bool, error)
	ListSchedules(ctx context.Context) ([]sluicetype.ScheduleState, error)

	// AcquireLease takes or renews the named lease for Holder. Busy leases
	// are reported with Held false and the current holder.
	AcquireLease(ctx context.Context, p LeaseParams) (sluicetype.LeaseState, error)
	// ReleaseLease gives the lease up if p.Holder still holds it.
	ReleaseLease(ctx context.Context, p ReleaseLeaseParams) (bool, error)
	// ListLeases reads every named lease, expired or not.
	ListLeases(ctx context.Context) ([]sluicetype.LeaseState, error)

	// AddStats adds each row's Count to its roll-up bucket (an upsert of
	// count = count + n), so that no writer ever counts finished jobs;
	// the counts and the latency slots in one transaction.
	AddStats(ctx context.Context, p AddStatsParams) error
	// ReadStats returns the roll-up buckets at or after p.Since.
	ReadStats(ctx context.Context, p ReadStatsParams) ([]sluicetype.StatRow, error)
	// ReadLatency returns the queue-latency slots of the buckets at or
	// after p.Since.
	ReadLatency(ctx context.Context, p ReadStatsParams) ([]sluicetype.LatencyRow, error)
	// CompactStats folds the minute buckets of the day before the hour of
	// p.Before into hourly buckets, counts and latency slots alike.
	CompactStats(ctx context.Context, p CompactStatsParams) error

	// UpsertNode writes a process's heartbeat row with last_seen from the
	// database clock; DeleteNode removes it.
	UpsertNode(ctx context.Context, n sluicetype.Node) error
	DeleteNode(ctx context.Context, id string) error
	ListNodes(ctx context.Context) ([]sluicetype.Node, error)
	// PurgeNodes deletes rows not seen for p.StaleAfter.
	PurgeNodes(ctx context.Context, p PurgeNodesParams) (int64, error)

	// IsTransient reports errors worth retrying whole: deadlocks,
	// serialization failures, a busy database.
	IsTransient(err error) bool
	// Dialect is what callers need to write their own SQL for this
	// database (batch's keyset queries over the application's tables).
	Dialect() Dialect

	// ListCheckpoints reads the batch cursors (sluice_checkpoints),
	// ordered by batch and shard.
	ListCheckpoints(ctx context.Context) ([]sluicetype.Checkpoint, error)
	// GetCheckpoint reads one shard's cursor, or fails with
	// ErrCheckpointLost when it has none.
	GetCheckpoint(ctx context.Context, p GetCheckpointParams) (sluicetype.Checkpoint, error)
	// CreateCheckpoint adds a shard's cursor unless it exists.
	CreateCheckpoint(ctx context.Context, p CreateCheckpointParams) error
	// The checkpoint writes below are fenced: each applies only while the
	// row's version is still p.Version, and fails with ErrCheckpointLost
	// otherwise. All but TouchCheckpoint raise the version.
	//
	// TakeCheckpoint makes p.Owner the shard's runner.
	TakeCheckpoint(ctx context.Context, p TakeCheckpointParams) error
	// AdvanceCheckpoint records a chunk done. With p.Tx set it writes in
	// the caller's transaction, so that the chunk's own writes and its
	// checkpoint commit together; with p.Tx nil, straight on the database.
	AdvanceCheckpoint(ctx context.Context, p AdvanceCheckpointParams) error
	// FinishCheckpoint sets the final status and clears the owner.
	FinishCheckpoint(ctx context.Context, p FinishCheckpointParams) error
	// ReleaseCheckpoint clears the owner if it is still p.Owner.
	ReleaseCheckpoint(ctx context.Context, p ReleaseCheckpointParams) error
	// TouchCheckpoint refreshes updated_at, which the runner's lease runs from.
	TouchCheckpoint(ctx context.Context, p TouchCheckpointParams) error
	// SetCheckpointStatus moves a batch's shards whose status is one of
	// p.From to p.Status, and returns how many it moved. It is not fenced:
	// a runner sees the new status at its next chunk boundary.
	SetCheckpointStatus(ctx context.Context, p SetCheckpointStatusParams) (int64, error)
	// DeleteCheckpoints removes a batch's cursors and returns how many.
	DeleteCheckpoints(ctx context.Context, p DeleteCheckpointsParams) (int64, error)

	// Limits: the cluster-wide circuit breakers and rate limits.
	Limits

	// Bench: what `sluice bench` does to its own tables.
	Bench

	// Audit: the trail of operator actions.
	Audit

	// Gauges: the cluster's shared count behind the /metrics gauges.
	Gauges

	// AttemptLogs: the output kept of each attempt.
	AttemptLogs

	// SyncTypes records p.Types in sluice_types, where the insert trigger
	// of sluice_jobs reads what a plain-SQL enqueue leaves out, and
	// returns how many rows it wrote; a type whose row already holds its
	// settings is not written. Rows of other types stay.
	SyncTypes(ctx context.Context, p SyncTypesParams) (int, error)

	// ServeTypes stamps the rows of p.Types in sluice_types (written by
	// SyncTypes) as served now, by the database's clock: a process that
	// runs their jobs calls it at start and then every minute. A type
	// without a row is left alone.
	ServeTypes(ctx context.Context, p ServeTypesParams) error

	// UnservedTypes counts the pending jobs, by type in type order, of the
	// types no process has served (ServeTypes) within p.Within: jobs that
	// wait for a handler nothing runs.
	UnservedTypes(ctx context.Context, p UnservedTypesParams) ([]sluicetype.TypeCount, error)

	// ServeQueues stamps p.Queues in sluice_queues as served now, by the
	// database's clock, writing a row (not paused) for a queue without
	// one: a process that claims jobs from them calls it at start and
	// then every minute.
	ServeQueues(ctx context.Context, p ServeQueuesParams) error

	// ServedQueues lists, in name order, the queues some process has
	// served (ServeQueues) within p.Within.
	ServedQueues(ctx context.Context, p UnservedQueuesParams) ([]string, error)

	// UnservedQueues counts the pending jobs, by queue in name order, of
	// the queues no process has served (ServeQueues) within p.Within: jobs
	// sent to a queue nothing runs, such as one no config lists.
	UnservedQueues(ctx context.Context, p UnservedQueuesParams) ([]sluicetype.QueueCount, error)

	// DropTables drops every table whose name starts with p.Prefix, exactly
	// (a LIKE pattern would take '_' as a wildcard). Tests and the bench
	// clean up their own prefixes with it.
	DropTables(ctx context.Context, p DropTablesParams) error
}

// Dialect is the SQL spelling of one database, for callers that write
// their own statements.
type Dialect struct {
	// Name is the driver's Name.
	Name string
	// Placeholder renders the n-th (1-based) bind parameter.
	Placeholder func(n int) string
	// QuoteIdent quotes an identifier, such as a reserved word used as a
	// column name.
	QuoteIdent func(ident string) string
	// RowCompare reports whether the planner turns a row comparison
	// (a, b) > (?, ?) into an index range scan; MariaDB does not.
	RowCompare bool
	// TextTimes reports that times are stored as text (SQLite): a time
	// argument must be bound in the stored layout, and a time column read
	// back is parsed, so it no longer compares exactly as stored.
	TextTimes bool
	// SkipDuplicates is the clause that ends an INSERT so that a row whose
	// primary or unique key already exists is skipped, not an error and
	// not an update of other columns; col is any inserted column (MySQL's
	// form needs one to name). A batch's copy sink uses it to make a
	// repeated chunk a no-op on the destination.
	SkipDuplicates func(col string) string
}

// SkipDuplicatesANSI is PostgreSQL's and SQLite's clause: no conflict
// target, so any unique key counts.
func SkipDuplicatesANSI(string) string { return " ON CONFLICT DO NOTHING" }

// QuoteANSI quotes an identifier in double quotes, as SQLite and
// PostgreSQL (and standard SQL) do.
func QuoteANSI(ident string) string { return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"` }

// Listener is implemented by drivers that can push wake-ups (PostgreSQL
// LISTEN/NOTIFY). Workers still poll, so a missed notification only costs
// latency.
type Listener interface {
	// Listen calls wake with a queue name whenever runnable jobs were
	// inserted into it, until ctx ends. It reconnects by itself and logs
	// the connection's troubles to log. wake("") means any queue may have
	// jobs nobody was told of: it is called each time listening
	// (re)starts.
	Listen(ctx context.Context, wake func(queue string), log *slog.Logger)
}

// Prober is implemented by drivers that cannot push wake-ups but can tell,
// with one indexed read that locks nothing, whether a queue has a runnable
// job. Idle workers probe often instead of claiming often, so that a job
// inserted by another process starts soon without loading the database.
type Prober interface {
	// Runnable reports whether Claim with this queue and these types
	// (none: any) would find a job now.
	Runnable(ctx context.Context, p RunnableParams) (bool, error)
}

// InsertParams is a batch of jobs to enqueue, in Tx if set.
type InsertParams struct {
	Tx   *sql.Tx
	Jobs []InsertJob
}

// InsertJob is one job to enqueue.
type InsertJob struct {
	Queue       string
	Type        string
	Key         string // empty: no business key
	Dedupe      string // DedupePermanent or DedupeActive
	Payload     []byte // valid JSON
	Priority    int
	MaxAttempts int
	// Partition is the job's fairness key (a tenant id, say); "" for none.
	Partition string
	// RunAt, if set, is when the job becomes runnable; otherwise Delay is
	// added to the database clock.
	RunAt time.Time
	Delay time.Duration
	// Deadline, if set, is when the job must have started by; otherwise a
	// positive DeadlineAfter sets it that long after the job becomes due
	// (RunAt, or the database clock plus Delay), which the database
	// computes. No claim starts a job past its deadline (SweepDeadlines).
	Deadline      time.Time
	DeadlineAfter time.Duration
	// ProgressTimeout, if positive, is the job's own progress timeout
	// (sluicetype.JobRow.ProgressTimeout); zero stores none.
	ProgressTimeout time.Duration
	// TraceParent is the enqueuing caller's W3C trace context ("" for
	// none), which the job's run continues.
	TraceParent string
}

// InsertResult is the id of the inserted job, or of the existing job that holds its key.
type InsertResult struct {
	ID        int64
	Duplicate bool
}

// ClaimParams selects the jobs to claim.
type ClaimParams struct {
	Queue string
	// Types limits the claim to jobs of these types; empty claims every
	// type. Every claim path applies it: plain, fair and limited.
	Types []string
	Limit int
	Lease time.Duration
	Token string // the fresh lease token written to locked_by
	// Fair takes turns between the queue's partitions (InsertJob.Partition)
	// instead of claiming in the queue's global order: docs/design.md
	// "Fair queues and concurrency limits" says how.
	Fair bool
	// Limits caps running jobs across every process; nil for none.
	Limits *RunningCaps
}

// MaxFairPartitions bounds the partitions one fair claim takes jobs from,
// so that the claim stays a fixed number of index seeks however many
// partitions a queue holds; the next claim goes on from where it stopped.
const MaxFairPartitions = 64

// RunningCaps are caps on running (processing) jobs and on job starts per
// second that hold across every process: a claim counts the running jobs
// and takes the rate tokens in its own transaction while it holds its
// queue's claim-state row, so claims that enforce limits wait for each
// other and each sees the ones before. Zero means no cap.
type RunningCaps struct {
	// Queue caps the running jobs of the claimed queue.
	Queue int
	// Partition caps the running jobs of each partition of the queue, and
	// Partitions overrides that cap for single partitions (a partition
	// listed here is capped even when Partition is 0). They need Fair: a
	// claim in global order would stall behind a partition at its cap.
	Partition  int
	Partitions map[string]int
	// Types caps the running jobs of each listed type over all queues.
	Types map[string]int
	// TypeRates caps the job starts of each listed type over all queues,
	// through the token bucket TypeBucket(type).
	TypeRates map[string]Rate
	// PartitionRate caps the job starts of each partition of the queue,
	// through the token bucket PartitionBucket(queue, partition), and
	// PartitionRates overrides it for single partitions. They need Fair,
	// as Partition does.
	PartitionRate  Rate
	PartitionRates map[string]Rate
}

// Rate is a token bucket that refills at PerSecond tokens a second, on the
// database clock, up to Burst; a job start takes a token. In any span of T
// seconds at most Burst + PerSecond*T jobs start. A zero PerSecond means
// no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// TypeBucket names the rate bucket of a type's starts.
func TypeBucket(typ string) string { return "type:" + typ }

// PartitionBucket names the rate bucket of a partition's starts in queue.
// A partition has no '#' (CheckPartition) and comes last, so no two
// (queue, partition) pairs share a name.
func PartitionBucket(queue, partition string) string { return "partition:" + queue + "#" + partition }

// PartitionRateOf is the start rate of partition p, zero for none.
func (l *RunningCaps) PartitionRateOf(p string) Rate {
	if r, ok := l.PartitionRates[p]; ok {
		return r
	}
	return l.PartitionRate
}

// Partitioned reports whether a cap or rate of l counts per partition,
// which makes the claim fair.
func (l *RunningCaps) Partitioned() bool {
	return l != nil && (l.Partition > 0 || len(l.Partitions) > 0 || l.PartitionRate.PerSecond > 0 || len(l.PartitionRates) > 0)
}

// PartitionCap is the cap of partition p, 0 for none.
func (l *RunningCaps) PartitionCap(p string) int {
	if n, ok := l.Partitions[p]; ok {
		return n
	}
	return l.Partition
}

// Active reports whether any cap is set.
func (l *RunningCaps) Active() bool {
	return l != nil && (l.Queue > 0 || l.Partitioned() || len(l.Types) > 0 || len(l.TypeRates) > 0)
}

// ReleaseClaimParams names the claim to hand back by its lease token. The
// token must be one the caller never received jobs under: a worker makes a
// fresh one for every claim call.
type ReleaseClaimParams struct {
	Token string
}

// PrefetchedParams names jobs held under Token that have not started.
type PrefetchedParams struct {
	Token string
	IDs   []int64
}

// StartedParams names a prefetched job that starts under Token.
type StartedParams struct {
	Token string
	ID    int64
}

// CancelParams names the job to cancel. Reason becomes a running job's
// last_error and its attempt's error in the history (the attempts kept
// bounded by KeepAttempts, 0 for DefaultKeepAttempts); a pending or failed
// job keeps its last_error.
type CancelParams struct {
	ID           int64
	Reason       string
	KeepAttempts int
}

// ProgressMark is when job ID's last progress report was written.
type ProgressMark struct {
	ID int64
	At time.Time
}

// HeartbeatParams extends the leases of the given jobs held under Token.
type HeartbeatParams struct {
	Token string
	IDs   []int64
	Lease time.Duration
}

// ProgressParams is one progress report of the attempt holding job ID
// under Token: Done of Total and a short Message, which the driver cleans
// with StorableText and cuts to sluicetype.MaxProgressMessageLen bytes.
type ProgressParams struct {
	ID          int64
	Token       string
	Done, Total int64
	Message     string
}

// Completion is the fenced outcome of one attempt.
type Completion struct {
	ID    int64
	Token string
	// Status is the new state: success or failed finish the job, pending
	// returns it for another run after Delay.
	Status sluicetype.Status
	Delay  time.Duration
	// Refund gives the attempt back (snooze, shutdown).
	Refund bool
	// Error replaces last_error when set; Result replaces result when set.
	Error  *string
	Result *string
	// Attempt, when set, is appended to the job's attempt history, which
	// keeps the last KeepAttempts (0: DefaultKeepAttempts). Workers set it
	// only for jobs that have failed before or fail now, so that a job
	// that never fails writes no history.
	Attempt      *sluicetype.Attempt
	KeepAttempts int
	// Log, when set, is the attempt's output, written (keyed by its JobID
	// and Attempt) only when the completion is applied. Nil writes
	// nothing and costs no statement.
	Log *sluicetype.AttemptLog
}

// CompleteParams is a set of outcomes to apply, each fenced by its own token.
type CompleteParams struct {
	Completions []Completion
}

// CompleteTxParams is one outcome to apply inside the caller's transaction.
type CompleteTxParams struct {
	Tx         *sql.Tx
	Completion Completion
}

// RescueParams bounds one rescue pass.
type RescueParams struct {
	Limit int
	// KeepAttempts bounds the attempt history that each rescued job's
	// lease_expired attempt is appended to (0: DefaultKeepAttempts).
	KeepAttempts int
}

// SweepDeadlinesParams bounds one deadline sweep.
type SweepDeadlinesParams struct {
	Limit int
	// KeepAttempts bounds the attempt history that each cancelled job's
	// entry is appended to (0: DefaultKeepAttempts).
	KeepAttempts int
}

// PurgeParams selects finished jobs to delete.
type PurgeParams struct {
	Status    sluicetype.Status
	OlderThan time.Duration
	Limit     int
}

// BulkParams selects the jobs of a bulk action: those matching Filter
// (its AfterID and Limit are ignored) in a status the action applies to,
// with an id at or below UpTo (0: no bound), newest first, at most MaxBulk;
// with a filter beyond the status, among the newest BulkScan jobs of each
// status only.
type BulkParams struct {
	Action string
	Filter sluicetype.ListParams
	UpTo   int64
}

// RetryParams selects one job by ID, or all failed jobs (optionally of Type).
type RetryParams struct {
	ID        int64
	AllFailed bool
	Type      string
}

// SetQueuePausedParams sets or clears one queue's paused flag.
type SetQueuePausedParams struct {
	Queue  string
	Paused bool
}

// PartitionStatsParams says how many partitions to return per queue.
type PartitionStatsParams struct {
	Limit int
}

// ScheduleStateParams names the schedule to read.
type ScheduleStateParams struct {
	Name string
}

// InitScheduleParams is a new schedule, handled up to Last.
type InitScheduleParams struct {
	Name string
	Last time.Time
}

// AdvanceScheduleParams records handled slots with a compare-and-set on Version.
type AdvanceScheduleParams struct {
	Name      string
	Version   int64
	LastSlot  time.Time
	LastJobID int64 // 0 keeps the previous one
	Fired     int
	Skipped   int
}

// LeaseParams names a lease and its would-be holder.
type LeaseParams struct {
	Name   string
	Holder string
	TTL    time.Duration
}

// ReleaseLeaseParams names a lease and the holder giving it up.
type ReleaseLeaseParams struct {
	Name   string
	Holder string
}

// GetCheckpointParams names one shard's checkpoint.
type GetCheckpointParams struct {
	Batch, Shard string
}

// CreateCheckpointParams is a new shard's checkpoint.
type CreateCheckpointParams struct {
	Batch, Shard string
	Status       string
	ChunkSize    int
}

// TakeCheckpointParams hands a shard to Owner with Status, clearing the last error.
type TakeCheckpointParams struct {
	Batch, Shard string
	Version      int64
	Owner        string
	Status       string
}

// AdvanceCheckpointParams records one chunk: Rows more rows done, up to Cursor.
type AdvanceCheckpointParams struct {
	// Tx, if set, is the caller's transaction that also holds the chunk's writes.
	Tx           *sql.Tx
	Batch, Shard string
	Version      int64
	Cursor       string
	Rows         int
	ChunkSize    int
}

// FinishCheckpointParams ends a shard's run with Status and, when set, Error.
type FinishCheckpointParams struct {
	Batch, Shard string
	Version      int64
	Status       string
	Error        string // stored cut to MaxErrorLen; empty: none
}

// ReleaseCheckpointParams gives a shard up if Owner still runs it.
type ReleaseCheckpointParams struct {
	Batch, Shard string
	Version      int64
	Owner        string
}

// TouchCheckpointParams refreshes a shard's lease.
type TouchCheckpointParams struct {
	Batch, Shard string
	Version      int64
}

// SetCheckpointStatusParams moves a batch's shards from any of From to Status.
type SetCheckpointStatusParams struct {
	Batch  string
	Status string
	From   []string
}

// DeleteCheckpointsParams names the batch whose cursors to remove.
type DeleteCheckpointsParams struct {
	Batch string
}

// DropTablesParams is the table-name prefix to drop, matched exactly.
type DropTablesParams struct {
	Prefix string
}

// RunnableParams is the queue and job types (none: any) to probe.
type RunnableParams struct {
	Queue string
	Types []string // as ClaimParams.Types
}

// StorableText makes s storable in every database's text column and cuts it to n
// bytes: invalid UTF-8 and NUL bytes (which PostgreSQL refuses) become
// U+FFFD. Outputs of commands and webhooks pass through it.
func StorableText(s string, n int, tail bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	return Truncate(s, n, tail)
}

// Truncate cuts s to at most n bytes on a UTF-8 boundary, keeping the tail
// when tail is true (the end of an error output is usually the useful part).
func Truncate(s string, n int, tail bool) string {
	if len(s) <= n {
		return s
	}
	if tail {
		i := len(s) - n
		for i < len(s) && s[i]&0xC0 == 0x80 {
			i++
		}
		return s[i:]
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
