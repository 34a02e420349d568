package sqldriver

// Queries is the typed set of statements every dialect provides, filled
// by LoadQueries from the -- name: sections of the dialect's
// queries/*.sql and of the shared queries/*.sql here. Each field is the
// name of its statement, so that a misspelled query does not compile. A
// driver embeds Queries in a struct of its own that adds the statements
// only it runs; LoadQueries fails when a field has no statement or a
// statement no field.
//
// Where a statement lives: one file per area (jobs, claim, complete,
// leases, checkpoints, schedules, stats, rates, schema, audit, attemptlogs, bench) per
// dialect. A statement all three dialects run verbatim is written once,
// in this package's queries/ file of its area, except those of the claim:
// each dialect's claim.sql holds every statement of its claim, so that
// its claim path reads in one file. Any other statement is written in
// each dialect that runs it, even when two dialects write it alike.
type Queries struct {
	// jobs.sql
	Insert, Get, List, ListIDs, ListStatus, ListPayload, Exists string
	Retry, RetryIDs, Cancel, Cancelled, Delete                  string
	ProgressSeen                                                string

	// claim.sql: the plain claim, the fair and limited one (ClaimFair),
	// the probe, the hand-back and the prefetch marks.
	Claim, ClaimIDs, Runnable, ReleaseClaim             string
	MarkPrefetched, StartPrefetched, DropLatePrefetched string
	ClaimStateLock, ClaimStateInit, ClaimStateSet       string
	RunningQueue, RunningTypes, RunningParts            string
	FairParts, FairPartsFirst, ClaimPick, ClaimPickPart string
	BucketLockMany, BucketInitMany, BucketPutMany       string

	// complete.sql
	Heartbeat, Held, Progress, Complete, Rescue, Purge, SweepDeadlines string

	// leases.sql
	LeaseGet, LeaseRelease, LeaseList           string
	NodeUpsert, NodeDelete, NodeList, NodePurge string

	// checkpoints.sql
	CheckpointList, CheckpointGet, CheckpointCreate, CheckpointTake, CheckpointAdvance string
	CheckpointFinish, CheckpointRelease, CheckpointTouch, CheckpointStatus             string
	CheckpointDelete                                                                   string

	// schedules.sql
	ScheduleGet, ScheduleInit, ScheduleAdvance, ScheduleList, ScheduleFires string

	// stats.sql
	Stats, StatsAdd, StatsRead, StatsRange, StatsDeleteRange  string
	LatencyAdd, LatencyRead, LatencyRange, LatencyDeleteRange string
	PartitionStats, QueuePause, QueuesPaused                  string
	QueuesServe, QueuesServed, QueuesUnserved                 string
	GaugesClaim, GaugesPut, GaugesRead                        string

	// rates.sql
	BucketLock, BucketInit, BucketPut, BucketList                 string
	CircuitGet, CircuitLock, CircuitInit, CircuitPut, CircuitList string

	// schema.sql
	Now, SchemaVersion, SchemaSet, DropList, TypesList, TypesPut string
	TypesServe, TypesUnserved                                    string

	// audit.sql: the trail of operator actions.
	AuditInsert, AuditList, AuditPrune string

	// attemptlogs.sql: the output kept of each attempt.
	AttemptLogPut, AttemptLogRead string

	// bench.sql: what cmd/sluice bench runs beyond the driver interface.
	BenchPreload, BenchAnalyze, BenchLatencies, BenchInsert, BenchCount string
}
