package sluice

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/maintenance"
	"github.com/sluicehq/sluice/sluicetype"
)

// JobInfo is a job as operators see it, in the CLI's and the API's JSON.
type JobInfo struct {
	ID          int64             `json:"id"`
	Queue       string            `json:"queue"`
	Type        string            `json:"type"`
	Key         string            `json:"key,omitempty"`
	Dedupe      string            `json:"dedupe"`
	Payload     json.RawMessage   `json:"payload"`
	Status      sluicetype.Status `json:"status"`
	Priority    int               `json:"priority"`
	Attempts    int               `json:"attempts"`
	MaxAttempts int               `json:"max_attempts"`
	NextRunAt   time.Time         `json:"next_run_at"`
	LockedBy    string            `json:"locked_by,omitempty"`
	LockedUntil *time.Time        `json:"locked_until,omitempty"`
	LastError   string            `json:"last_error,omitempty"`
	Result      string            `json:"result,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`
	Partition   string            `json:"partition,omitempty"`
	// TraceID is the trace the job was enqueued in, "" for none.
	TraceID string `json:"trace_id,omitempty"`
	// History is the job's last attempts, oldest first, for a job that
	// failed at least once; Job fills it, Jobs does not.
	History []AttemptInfo `json:"history,omitempty"`
}

// AttemptInfo is one attempt of a job's history. Start and End are the
// database clock; Start is nil for an attempt whose worker vanished (its
// lease expired), which knows only its end.
type AttemptInfo struct {
	Attempt    int        `json:"attempt"`
	Node       string     `json:"node,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	End        time.Time  `json:"end"`
	DurationMS *float64   `json:"duration_ms,omitempty"`
	// Outcome is success, retry, failed, released (given back without
	// being charged) or lease_expired.
	Outcome    sluicetype.Outcome `json:"outcome"`
	Error      string             `json:"error,omitempty"`
	HTTPStatus int                `json:"http_status,omitempty"`
	ExitCode   *int               `json:"exit_code,omitempty"`
}

// Duration is how long the attempt took, to the millisecond; 0 when its
// start is unknown.
func (a AttemptInfo) Duration() time.Duration {
	if a.DurationMS == nil {
		return 0
	}
	return time.Duration(*a.DurationMS * float64(time.Millisecond)).Round(time.Millisecond)
}

func attemptInfoOf(a sluicetype.Attempt) AttemptInfo {
	info := AttemptInfo{Attempt: a.Number, Node: a.Node, End: a.End, Outcome: a.Outcome, Error: a.Error,
		HTTPStatus: a.HTTPStatus, ExitCode: a.ExitCode}
	if !a.Start.IsZero() {
		start := a.Start
		info.Start = &start
		ms := float64(a.Duration()) / float64(time.Millisecond)
		info.DurationMS = &ms
	}
	return info
}

func infoOf(r sluicetype.JobRow) JobInfo {
	payload := json.RawMessage(r.Payload)
	if !json.Valid(payload) {
		// A row written by hand may hold anything; keep the JSON valid.
		b, _ := json.Marshal(string(r.Payload))
		payload = b
	}
	info := JobInfo{ID: r.ID, Queue: r.Queue, Type: r.Type, Key: r.Key, Dedupe: r.Dedupe, Payload: payload,
		Status: r.Status, Priority: r.Priority, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
		NextRunAt: r.NextRunAt, LockedBy: r.LockedBy, LockedUntil: r.LockedUntil, LastError: r.LastError,
		Result: r.Result, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt,
		Partition: r.Partition,
		TraceID:   traceIDOf(WithTraceParent(context.Background(), r.TraceParent))}
	for _, a := range r.History {
		info.History = append(info.History, attemptInfoOf(a))
	}
	return info
}

// Job reads one job; a missing one is sluicetype.ErrNotFound.
func (c *Client) Job(ctx context.Context, id int64) (*JobInfo, error) {
	r, err := c.drv.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	info := infoOf(*r)
	return &info, nil
}

// ListParams filters a job listing. It is an alias of the public
// sluicetype.ListParams (one type, not a copy), kept so that listing jobs needs
// only the root package.
type ListParams = sluicetype.ListParams

// Jobs lists jobs newest first. Pass the last id of a page as AfterID to
// read the next one.
func (c *Client) Jobs(ctx context.Context, p ListParams) ([]JobInfo, error) {
	if err := checkList(p); err != nil {
		return nil, err
	}
	rows, err := c.drv.ListJobs(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]JobInfo, len(rows))
	for i, r := range rows {
		out[i] = infoOf(r)
	}
	return out, nil
}

func checkList(p ListParams) error {
	if p.Status != "" && !p.Status.Valid() {
		return inputErr("status", "%q: want pending, processing, success, failed or cancelled", p.Status)
	}
	if p.PayloadField != "" && !sluicetype.ValidPayloadField(p.PayloadField) {
		return inputErr("payload_field", "%q: want a dotted path of names made of letters, digits and underscores, such as customer.id", p.PayloadField)
	}
	if p.PayloadField == "" && p.PayloadValue != "" {
		return inputErr("payload_field", "missing: a payload value needs the field it is compared with")
	}
	return nil
}

// CountBulk counts the jobs matching the filter that the bulk action
// (sluicetype.BulkRetry, BulkCancel, BulkDelete) would change, up to
// sluicetype.MaxBulk; pass the result's UpTo to Bulk so that it changes only
// those counted.
func (c *Client) CountBulk(ctx context.Context, action string, filter ListParams) (sluicetype.BulkCount, error) {
	if err := checkBulk(action, filter); err != nil {
		return sluicetype.BulkCount{}, err
	}
	return c.drv.CountBulk(ctx, driver.BulkParams{Action: action, Filter: filter})
}

// Bulk applies the action to the jobs matching the filter with an id at
// or below upTo (0: any), at most sluicetype.MaxBulk of them, and returns how
// many changed. Bulk cancels are not counted in the metrics and roll-ups
// of cancelled jobs, unlike Cancel.
func (c *Client) Bulk(ctx context.Context, action string, filter ListParams, upTo int64) (int64, error) {
	if err := checkBulk(action, filter); err != nil {
		return 0, err
	}
	n, err := c.drv.Bulk(ctx, driver.BulkParams{Action: action, Filter: filter, UpTo: upTo})
	if n > 0 {
		c.log.Info("bulk action", "action", action, "jobs", n, "status", filter.Status, "type", filter.Type,
			"queue", filter.Queue, "key_prefix", filter.KeyPrefix, "payload_field", filter.PayloadField)
	}
	return n, err
}

func checkBulk(action string, filter ListParams) error {
	if _, ok := sluicetype.BulkStatuses[action]; !ok {
		return inputErr("action", "%q: want retry, cancel or delete", action)
	}
	if filter.Tx != nil {
		return inputErr("tx", "a bulk action runs in chunks of its own transactions, not in the caller's")
	}
	return checkList(filter)
}

// Retry moves a failed or cancelled job back to pending with more attempts.
func (c *Client) Retry(ctx context.Context, id int64) error {
	_, err := c.drv.Retry(ctx, driver.RetryParams{ID: id})
	return err
}

// RetryFailed moves every failed job (of jobType, if given) back to
// pending and returns how many moved.
func (c *Client) RetryFailed(ctx context.Context, jobType string) (int64, error) {
	return c.drv.Retry(ctx, driver.RetryParams{AllFailed: true, Type: jobType})
}

// Cancel moves a pending or failed job to cancelled.
func (c *Client) Cancel(ctx context.Context, id int64) error {
	if err := c.drv.Cancel(ctx, id); err != nil {
		return err
	}
	c.countCancel(ctx, id)
	return nil
}

// Purge deletes finished jobs in status older than olderThan, in chunks,
// and returns how many it deleted.
func (c *Client) Purge(ctx context.Context, status sluicetype.Status, olderThan time.Duration) (int64, error) {
	if !sluicetype.IsFinal(status) {
		return 0, inputErr("status", "%q: only success, failed or cancelled jobs can be purged", status)
	}
	return maintenance.Purge(ctx, c.drv, c.log, status, olderThan)
}

// QueueStats is the live picture of one queue.
type QueueStats struct {
	Queue            string  `json:"queue"`
	Pending          int64   `json:"pending"`
	Processing       int64   `json:"processing"`
	Failed           int64   `json:"failed"`
	OldestPendingAge float64 `json:"oldest_pending_age_s"` // seconds a runnable job has waited
	Paused           bool    `json:"paused"`
	// Finished attempts by outcome (success, retry, failed, cancelled) in
	// the last hour and day, from the sluice_stats roll-ups.
	FinishedHour map[string]int64 `json:"finished_1h"`
	FinishedDay  map[string]int64 `json:"finished_24h"`
	// Fair and MaxRunning are the queue's settings in this client's
	// config (false and 0 when it has none for the queue).
	Fair       bool `json:"fair,omitempty"`
	MaxRunning int  `json:"max_running,omitempty"`
	// Partitions are the TopPartitions partitions with the largest
	// backlog, with their running jobs against their cap (0: none).
	Partitions []PartitionStats `json:"partitions,omitempty"`
}

// ApplyConfig fills in the queue's settings from q: a client that runs no
// workers (the CLI's) has the config file's instead.
func (s *QueueStats) ApplyConfig(q QueueConfig) {
	s.Fair, s.MaxRunning = q.Fair, q.MaxRunning
	caps := driver.RunningCaps{Partition: q.MaxRunningPerPartition, Partitions: q.PartitionMaxRunning}
	for i := range s.Partitions {
		s.Partitions[i].MaxRunning = caps.PartitionCap(s.Partitions[i].Partition)
	}
}

// PartitionStats is one partition of a queue in QueueStats.
type PartitionStats struct {
	Partition  string `json:"partition"`
	Pending    int64  `json:"pending"`
	Running    int64  `json:"running"`
	MaxRunning int    `json:"max_running,omitempty"`
}

// TopPartitions is how many partitions QueueStats lists per queue. It
// bounds the output, as the number of partitions (tenants) is not; for
// the same reason no metric has a partition label.
const TopPartitions = 10

// Stats reads per-queue counts from indexes that hold live jobs only.
func (c *Client) Stats(ctx context.Context) ([]QueueStats, error) {
	qs, _, err := c.queuesAndDay(ctx)
	return qs, err
}

// queuesAndDay reads the queue statistics, and returns the day's roll-ups
// they were summed from for the type statistics to reuse.
func (c *Client) queuesAndDay(ctx context.Context) ([]QueueStats, lastDay, error) {
	rows, err := c.drv.Stats(ctx)
	if err != nil {
		return nil, lastDay{}, err
	}
	paused, err := c.drv.PausedQueues(ctx)
	if err != nil {
		return nil, lastDay{}, err
	}
	day, err := c.readLastDay(ctx)
	if err != nil {
		return nil, lastDay{}, err
	}
	qs, err := c.queueStats(ctx, rows, paused, day)
	return qs, day, err
}

// lastDay is the database's clock and the roll-ups of the 24 hours before
// it, which the queue and the type statistics both sum.
type lastDay struct {
	now   time.Time
	rolls []sluicetype.StatRow
}

func (c *Client) readLastDay(ctx context.Context) (lastDay, error) {
	now, err := c.drv.Now(ctx)
	if err != nil {
		return lastDay{}, err
	}
	rolls, err := c.drv.ReadStats(ctx, driver.ReadStatsParams{Since: now.Add(-24 * time.Hour)})
	if err != nil {
		return lastDay{}, err
	}
	return lastDay{now: now, rolls: rolls}, nil
}

// queueStats joins the live rows, the paused flags and the day's
// roll-ups per queue, with each queue's top partitions.
func (c *Client) queueStats(ctx context.Context, rows []sluicetype.QueueStats, paused map[string]bool, day lastDay) ([]QueueStats, error) {
	now, rolls := day.now, day.rolls
	out := make([]QueueStats, 0, len(rows))
	index := map[string]int{}
	at := func(q string) *QueueStats {
		i, ok := index[q]
		if !ok {
			i = len(out)
			index[q] = i
			out = append(out, QueueStats{Queue: q, Paused: paused[q], FinishedHour: map[string]int64{}, FinishedDay: map[string]int64{}})
		}
		return &out[i]
	}
	for _, r := range rows {
		s := at(r.Queue)
		s.Pending, s.Processing, s.Failed = r.Pending, r.Processing, r.Failed
		s.OldestPendingAge = r.PendingAge(now).Seconds()
	}
	for q := range paused {
		at(q)
	}
	hourAgo := now.Add(-time.Hour)
	for _, r := range rolls {
		s := at(r.Queue)
		s.FinishedDay[string(r.Outcome)] += r.Count
		if !r.Bucket.Before(hourAgo) {
			s.FinishedHour[string(r.Outcome)] += r.Count
		}
	}
	if err := c.addPartitions(ctx, at); err != nil {
		return nil, err
	}
	for i := range out {
		if qc, ok := c.cfg.Queues[out[i].Queue]; ok {
			qc.ApplyTo(&out[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out, nil
}

// addPartitions adds every queue's top partitions to the QueueStats that
// at returns for it (nil: a queue the caller leaves out), in one query:
// one per queue took seconds with 10,000 queues.
func (c *Client) addPartitions(ctx context.Context, at func(queue string) *QueueStats) error {
	parts, err := c.drv.PartitionStats(ctx, driver.PartitionStatsParams{Limit: TopPartitions})
	if err != nil {
		return err
	}
	for _, p := range parts {
		if s := at(p.Queue); s != nil {
			s.Partitions = append(s.Partitions, PartitionStats{Partition: p.Partition, Pending: p.Pending, Running: p.Running})
		}
	}
	return nil
}

// QueuePartitions returns, for each of queues, its top partitions and
// its settings (Fair, MaxRunning and the partitions' caps), without the
// counts Stats reads: for a page that has them already and shows a few of
// many queues.
func (c *Client) QueuePartitions(ctx context.Context, queues []string) ([]QueueStats, error) {
	out := make([]QueueStats, len(queues))
	index := make(map[string]int, len(queues))
	for i, q := range queues {
		out[i].Queue = q
		index[q] = i
	}
	err := c.addPartitions(ctx, func(q string) *QueueStats {
		if i, ok := index[q]; ok {
			return &out[i]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		if qc, ok := c.cfg.Queues[out[i].Queue]; ok {
			qc.ApplyTo(&out[i])
		}
	}
	return out, nil
}

// TypeStats is one job type's finished attempts and queue latency over
// the last hour and day, from the roll-ups (sluice_stats and
// sluice_stats_latency), never from counting finished rows.
type TypeStats struct {
	Type string `json:"type"`
	// Finished attempts by outcome (success, retry, failed, cancelled).
	FinishedHour map[string]int64 `json:"finished_1h"`
	FinishedDay  map[string]int64 `json:"finished_24h"`
	// Queue latency of the attempts that started; nil when none did.
	LatencyHour *LatencyStats `json:"queue_latency_1h"`
	LatencyDay  *LatencyStats `json:"queue_latency_24h"`
}

// LatencyStats is the p50 and p95 of the queue latencies (next_run_at to
// the claim, in database time) of Count attempts. They come from a
// histogram with slots doubling from 1 ms (see sluicetype.LatencySlots),
// interpolated within a slot: under 1 ms they are off by under 1 ms, above
// it by under a factor of 2, and above 2h19m they say "at least" that.
type LatencyStats struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_s"`
	P95   float64 `json:"p95_s"`
}

// LatencyOf summarizes a histogram; nil when it counted nothing.
func LatencyOf(h *sluicetype.Latency) *LatencyStats {
	if h == nil {
		return nil
	}
	p50, ok := h.Quantile(0.5)
	if !ok {
		return nil
	}
	p95, _ := h.Quantile(0.95)
	// Microseconds: the interpolation's nanoseconds are noise, and they
	// would show as 124.518399999 in JSON.
	return &LatencyStats{Count: h.Count(), P50: p50.Round(time.Microsecond).Seconds(), P95: p95.Round(time.Microsecond).Seconds()}
}

// TypeStats reads per-type counts and queue latency percentiles over the
// last hour and day (of database time) from the roll-ups, sorted by type.
func (c *Client) TypeStats(ctx context.Context) ([]TypeStats, error) {
	d, err := c.readLastDay(ctx)
	if err != nil {
		return nil, err
	}
	return c.typeStats(ctx, d)
}

// typeStats sums the day's roll-ups per type and reads their latency.
func (c *Client) typeStats(ctx context.Context, d lastDay) ([]TypeStats, error) {
	day, hour := d.now.Add(-24*time.Hour), d.now.Add(-time.Hour)
	rolls := d.rolls
	lat, err := c.drv.ReadLatency(ctx, driver.ReadStatsParams{Since: day})
	if err != nil {
		return nil, err
	}
	byType := map[string]*TypeStats{}
	at := func(typ string) *TypeStats {
		t := byType[typ]
		if t == nil {
			t = &TypeStats{Type: typ, FinishedHour: map[string]int64{}, FinishedDay: map[string]int64{}}
			byType[typ] = t
		}
		return t
	}
	for _, r := range rolls {
		t := at(r.Type)
		t.FinishedDay[string(r.Outcome)] += r.Count
		if !r.Bucket.Before(hour) {
			t.FinishedHour[string(r.Outcome)] += r.Count
		}
	}
	for typ, h := range sluicetype.LatencyByType(lat, day) {
		at(typ).LatencyDay = LatencyOf(h)
	}
	for typ, h := range sluicetype.LatencyByType(lat, hour) {
		at(typ).LatencyHour = LatencyOf(h)
	}
	out := make([]TypeStats, 0, len(byType))
	for _, t := range byType {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// StatsSnapshot is the whole picture that /v1/stats and `sluice stats
// --json` show. Every list is empty rather than nil, so that JSON has []
// for it, never null. The fields stand in the order of their JSON names,
// which is the order these documents have had since they were maps.
type StatsSnapshot struct {
	Circuits    []CircuitState `json:"circuits"`
	Queues      []QueueStats   `json:"queues"`
	RateBuckets []RateBucket   `json:"rate_buckets"`
	Types       []TypeStats    `json:"types"`
	// WaitingForHandler: see Client.WaitingForHandler.
	WaitingForHandler []sluicetype.TypeCount `json:"waiting_for_handler"`
}

// StatsSnapshot reads Stats, Circuits, RateBuckets, TypeStats and
// WaitingForHandler at once, the clock and the day's roll-ups once for
// both the queues and the types.
func (c *Client) StatsSnapshot(ctx context.Context) (StatsSnapshot, error) {
	var s StatsSnapshot
	var day lastDay
	var err error
	if s.Queues, day, err = c.queuesAndDay(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	if s.Circuits, err = c.Circuits(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	if s.RateBuckets, err = c.RateBuckets(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	if s.Types, err = c.typeStats(ctx, day); err != nil {
		return StatsSnapshot{}, err
	}
	if s.WaitingForHandler, err = c.WaitingForHandler(ctx); err != nil {
		return StatsSnapshot{}, err
	}
	return s, nil
}

// PauseQueue stops every worker of queue from claiming, within about a
// second, until ResumeQueue. Running jobs finish. A queue that nothing
// knows (see checkQueueKnown) is refused, with an *InputError.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	if err := checkName("queue", queue, sluicetype.MaxQueueLen); err != nil {
		return err
	}
	if err := c.checkQueueKnown(ctx, queue); err != nil {
		return err
	}
	return c.drv.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: queue, Paused: true})
}

// ResumeQueue lets a paused queue's workers claim again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	if err := checkName("queue", queue, sluicetype.MaxQueueLen); err != nil {
		return err
	}
	if err := c.checkQueueKnown(ctx, queue); err != nil {
		return err
	}
	return c.drv.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: queue, Paused: false})
}

// ValidateEnqueue validates one job as Enqueue would, without writing anything.
func (c *Client) ValidateEnqueue(p EnqueueParams) error {
	_, err := c.prepare(p)
	return err
}
