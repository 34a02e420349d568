package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/buildinfo"
	"github.com/sluicehq/sluice/internal/dur"
	"github.com/sluicehq/sluice/sluicetype"
)

// fail answers err: bad input with its own status, a missing job 404, a
// job in the wrong state or whose key is taken 409, anything else 500 with the detail only in
// the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var re *requestError
	var ie *sluice.InputError
	switch {
	case errors.As(err, &re):
		writeError(w, re.code, re.msg)
	case errors.As(err, &ie):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, sluicetype.ErrNotFound):
		writeError(w, http.StatusNotFound, sluicetype.ErrNotFound.Error())
	case errors.Is(err, sluicetype.ErrWrongState):
		writeError(w, http.StatusConflict, sluicetype.ErrWrongState.Error())
	case errors.Is(err, sluicetype.ErrKeyTaken):
		writeError(w, http.StatusConflict, "job cannot be retried: "+sluicetype.ErrKeyTaken.Error())
	default:
		s.log.Error("http request failed", "method", r.Method, "path", s.scrub.scrub(r.URL.Path), "err", err)
		writeError(w, http.StatusInternalServerError, "internal error; see the server log")
	}
}

// reply answers a handler's last call: its result as 200 JSON, or its
// error through fail.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// okBody answers a call that has nothing else to say.
var okBody = struct {
	OK bool `json:"ok"`
}{OK: true}

// healthBody is what /healthz answers, and /readyz beside its schema
// version: that the process is alive, and which build it runs.
type healthBody struct {
	OK            bool   `json:"ok"`
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	Date          string `json:"date"`
	SchemaVersion int    `json:"schema_version,omitempty"`
}

func newHealthBody() healthBody {
	bi := buildinfo.Get()
	return healthBody{OK: true, Version: bi.Version, Commit: bi.Commit, Date: bi.Date}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, newHealthBody())
}

// readyz reports whether this process can serve: the database answers and
// its schema is the one this binary expects.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	cur, err := s.client.CheckSchema(ctx)
	switch {
	case errors.Is(err, sluicetype.ErrSchemaMissing), errors.Is(err, sluicetype.ErrSchemaTooNew):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		s.log.Warn("readiness check failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "database unreachable: "+err.Error())
	default:
		body := newHealthBody()
		body.SchemaVersion = cur
		writeJSON(w, http.StatusOK, body)
	}
}

// enqueue is POST /v1/jobs: one job, in the caller's trace.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	var p sluice.EnqueueParams
	if err == nil {
		p, err = decodeJob(b)
	}
	if err == nil {
		err = s.mayEnqueue(tokenOf(r), "", p)
	}
	var res sluice.EnqueueResult
	if err == nil {
		res, err = s.client.Enqueue(callerTrace(r), p)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	code := http.StatusCreated
	if res.Duplicate {
		code = http.StatusOK
	}
	writeJSON(w, code, res)
}

// decodeJob reads the body of POST /v1/jobs: one job.
func decodeJob(b []byte) (sluice.EnqueueParams, error) {
	req, err := sluice.DecodeEnqueueRequest(b)
	if err != nil {
		return sluice.EnqueueParams{}, err
	}
	return req.Params()
}

// enqueueMany is POST /v1/jobs/many: a batch, all or nothing, in the
// caller's trace.
func (s *Server) enqueueMany(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	var ps []sluice.EnqueueParams
	if err == nil {
		ps, err = s.decodeJobs(b)
	}
	// All or nothing: one job the token may not enqueue refuses them all.
	for i := 0; err == nil && i < len(ps); i++ {
		err = s.mayEnqueue(tokenOf(r), "["+strconv.Itoa(i)+"].", ps[i])
	}
	var res []sluice.EnqueueResult
	if err == nil {
		res, err = s.client.EnqueueMany(callerTrace(r), ps)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Inserted   int      `json:"inserted"`
		Duplicates int      `json:"duplicates"`
		IDs        []int64  `json:"ids"`
		Warnings   []string `json:"warnings,omitempty"`
	}{IDs: make([]int64, len(res))}
	for i, x := range res {
		out.IDs[i] = x.ID
		for _, w := range x.Warnings {
			if !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		if x.Duplicate {
			out.Duplicates++
		} else {
			out.Inserted++
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// callerTrace is the request's context continuing the caller's trace
// from its W3C traceparent header, if it sent a valid one: the jobs it
// enqueues record it, so that their runs join the caller's trace.
func callerTrace(r *http.Request) context.Context {
	return sluice.WithTraceParent(r.Context(), r.Header.Get("Traceparent"))
}

// jobID reads the {id} path segment.
func jobID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest("id: %q is not a positive integer", v)
	}
	return id, nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := s.client.Job(r.Context(), id)
	s.reply(w, r, j, err)
}

// maxListLimit is the driver's own cap; a larger limit is refused rather
// than silently shortened.
const maxListLimit = 1000

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	// A misspelled filter (?staus=failed) would list every job.
	if err := s.onlyParams(r, "status", "type", "queue", "key_prefix", "payload_field", "payload_value", "after_id", "limit"); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	ints := intParams{r: r}
	after := ints.get("after_id", 0, 0, math.MaxInt64)
	limit := ints.get("limit", 100, 1, maxListLimit)
	if ints.err != nil {
		s.fail(w, r, ints.err)
		return
	}
	jobs, err := s.client.Jobs(r.Context(), sluicetype.ListParams{Status: sluicetype.Status(q.Get("status")), Type: q.Get("type"),
		Queue: q.Get("queue"), KeyPrefix: q.Get("key_prefix"), PayloadField: q.Get("payload_field"), PayloadValue: q.Get("payload_value"),
		AfterID: after, Limit: int(limit)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Jobs []sluicetype.JobRow `json:"jobs"`
		// NextAfterID is null on the last page.
		NextAfterID *int64 `json:"next_after_id"`
	}{Jobs: jobs}
	if out.Jobs == nil {
		out.Jobs = []sluicetype.JobRow{}
	}
	if len(jobs) == int(limit) {
		out.NextAfterID = &jobs[len(jobs)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) retryJob(w http.ResponseWriter, r *http.Request) {
	s.jobAction(w, r, s.client.Retry)
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	s.jobAction(w, r, s.client.Cancel)
}

func (s *Server) jobAction(w http.ResponseWriter, r *http.Request, act func(context.Context, int64) error) {
	id, err := jobID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, okBody, act(r.Context(), id))
}

// maxRunSeconds bounds a cron-triggered pass; longer work belongs to
// `sluice work`, and the run lock's TTL grows with it.
const maxRunSeconds = 3600

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := s.onlyParams(r, "queue", "type", "max_jobs", "max_seconds"); err != nil {
		s.fail(w, r, err)
		return
	}
	ints := intParams{r: r}
	maxJobs := ints.get("max_jobs", 20, 1, 100000)
	secs := ints.get("max_seconds", 45, 1, maxRunSeconds)
	if ints.err != nil {
		s.fail(w, r, ints.err)
		return
	}
	// A caller that hangs up (curl -m) does not cut the pass's jobs short:
	// the pass is bounded by max_seconds and its jobs by their timeouts.
	res, err := s.client.RunOnce(context.WithoutCancel(r.Context()), sluice.RunParams{Queue: q.Get("queue"), Type: q.Get("type"),
		MaxJobs: int(maxJobs), MaxDuration: time.Duration(secs) * time.Second})
	s.reply(w, r, res, err)
}

// onlyParams refuses query parameters other than known (and ?token= where
// the server accepts it), naming them: a typo such as ?maxjobs=5 must not
// pass silently with the default.
func (s *Server) onlyParams(r *http.Request, known ...string) error {
	var bad []string
	for name := range r.URL.Query() {
		if !slices.Contains(known, name) && !(s.queryToken && name == "token") {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	want := "none"
	if len(known) > 0 {
		want = strings.Join(known, ", ")
	}
	return badRequest("unknown query parameter %s (known: %s)", strings.Join(bad, ", "), want)
}

// maxStatsQueues bounds a page of /v1/stats?limit=.
const maxStatsQueues = 10000

// statsPage is /v1/stats with its queues cut to one page: NextAfter is the
// queue to ask after for the next, "" on the last page.
type statsPage struct {
	sluice.StatsSnapshot
	NextAfter string `json:"next_after,omitempty"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	if err := s.onlyParams(r, "limit", "after"); err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := queryInt(r, "limit", 0, 1, maxStatsQueues)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	snap, err := s.client.StatsSnapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := statsPage{StatsSnapshot: snap}
	if after := r.URL.Query().Get("after"); after != "" || limit > 0 {
		// Queues come sorted by name.
		qs := snap.Queues
		i := sort.Search(len(qs), func(i int) bool { return qs[i].Queue > after })
		end := len(qs)
		if limit > 0 {
			end = min(i+int(limit), len(qs))
		}
		page.Queues = qs[i:end]
		if end < len(qs) {
			page.NextAfter = qs[end-1].Queue
		}
	}
	s.reply(w, r, page, nil)
}

func (s *Server) openCircuit(w http.ResponseWriter, r *http.Request) {
	s.circuitAction(w, r, s.client.OpenCircuit)
}

func (s *Server) closeCircuit(w http.ResponseWriter, r *http.Request) {
	s.circuitAction(w, r, s.client.CloseCircuit)
}

func (s *Server) circuitAction(w http.ResponseWriter, r *http.Request, act func(context.Context, string) (sluicetype.Circuit, error)) {
	st, err := act(r.Context(), r.PathValue("type"))
	s.reply(w, r, st, err)
}

func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request) {
	s.queueAction(w, r, s.client.PauseQueue)
}

func (s *Server) resumeQueue(w http.ResponseWriter, r *http.Request) {
	s.queueAction(w, r, s.client.ResumeQueue)
}

func (s *Server) queueAction(w http.ResponseWriter, r *http.Request, act func(context.Context, string) error) {
	if err := s.onlyParams(r); err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, okBody, act(r.Context(), r.PathValue("name")))
}

// audit lists the audit trail newest first (GET /v1/audit).
func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	if err := s.onlyParams(r, "since", "actor", "action", "before_id", "limit"); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	ints := intParams{r: r}
	before := ints.get("before_id", 0, 0, math.MaxInt64)
	limit := ints.get("limit", 100, 1, sluice.MaxAuditList)
	if ints.err != nil {
		s.fail(w, r, ints.err)
		return
	}
	p := sluice.AuditParams{Actor: q.Get("actor"), Action: q.Get("action"), BeforeID: before, Limit: int(limit)}
	if v := q.Get("since"); v != "" {
		d, err := dur.Parse(v)
		if err != nil || d <= 0 {
			s.fail(w, r, badRequest("since: %q: want a positive duration such as 24h or 7d", v))
			return
		}
		p.Within = d
	}
	es, err := s.client.Audit(r.Context(), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Entries []sluicetype.AuditEntry `json:"entries"`
		// NextBeforeID is null on the last page.
		NextBeforeID *int64 `json:"next_before_id"`
	}{Entries: es}
	if len(es) == int(limit) {
		out.NextBeforeID = &es[len(es)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}
