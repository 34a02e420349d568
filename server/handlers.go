package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/buildinfo"
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
	case errors.Is(err, driver.ErrNotFound):
		writeError(w, http.StatusNotFound, driver.ErrNotFound.Error())
	case errors.Is(err, driver.ErrWrongState):
		writeError(w, http.StatusConflict, driver.ErrWrongState.Error())
	case errors.Is(err, driver.ErrKeyTaken):
		writeError(w, http.StatusConflict, "job cannot be retried: "+driver.ErrKeyTaken.Error())
	default:
		s.log.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
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
	cur, err := driver.CheckSchema(ctx, s.client.Driver())
	switch {
	case errors.Is(err, driver.ErrSchemaMissing), errors.Is(err, driver.ErrSchemaTooNew):
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

func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req sluice.JobRequest
	if err := decodeStrict(b, &req, ""); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := jobParams(&req, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.client.Enqueue(callerTrace(r), p)
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

func (s *Server) enqueueBatch(w http.ResponseWriter, r *http.Request) {
	b, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Elements are decoded one by one so that an error names its index.
	var raw []json.RawMessage
	if err := decodeStrict(b, &raw, ""); err != nil {
		s.fail(w, r, err)
		return
	}
	ps := make([]sluice.EnqueueParams, len(raw))
	for i, e := range raw {
		prefix := fmt.Sprintf("[%d].", i)
		var req sluice.JobRequest
		if err := decodeStrict(e, &req, prefix); err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := jobParams(&req, prefix)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		// ValidateEnqueue validates as EnqueueMany will, but here the index can be
		// named; EnqueueMany then writes all or nothing.
		if err := s.client.ValidateEnqueue(p); err != nil {
			var ie *sluice.InputError
			if errors.As(err, &ie) {
				s.fail(w, r, badRequest("%s%s", prefix, ie.Error()))
				return
			}
			s.fail(w, r, fmt.Errorf("checking job %d: %w", i, err))
			return
		}
		ps[i] = p
	}
	res, err := s.client.EnqueueMany(callerTrace(r), ps)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Inserted   int     `json:"inserted"`
		Duplicates int     `json:"duplicates"`
		IDs        []int64 `json:"ids"`
	}{IDs: make([]int64, len(res))}
	for i, x := range res {
		out.IDs[i] = x.ID
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
	q := r.URL.Query()
	after, err := queryInt(r, "after_id", 0, 0, math.MaxInt64)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := queryInt(r, "limit", 100, 1, maxListLimit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	jobs, err := s.client.Jobs(r.Context(), sluice.ListParams{Status: driver.Status(q.Get("status")), Type: q.Get("type"),
		Queue: q.Get("queue"), KeyPrefix: q.Get("key_prefix"), PayloadField: q.Get("payload_field"), PayloadValue: q.Get("payload_value"),
		AfterID: after, Limit: int(limit)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Jobs []sluice.JobInfo `json:"jobs"`
		// NextAfterID is null on the last page.
		NextAfterID *int64 `json:"next_after_id"`
	}{Jobs: jobs}
	if out.Jobs == nil {
		out.Jobs = []sluice.JobInfo{}
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
	maxJobs, err := queryInt(r, "max_jobs", 20, 1, 100000)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	secs, err := queryInt(r, "max_seconds", 45, 1, maxRunSeconds)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.client.RunOnce(r.Context(), sluice.RunParams{Queue: q.Get("queue"), Type: q.Get("type"),
		MaxJobs: int(maxJobs), MaxDuration: time.Duration(secs) * time.Second})
	s.reply(w, r, res, err)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	snap, err := s.client.StatsSnapshot(r.Context())
	s.reply(w, r, snap, err)
}

func (s *Server) openCircuit(w http.ResponseWriter, r *http.Request) {
	s.circuitAction(w, r, s.client.OpenCircuit)
}

func (s *Server) closeCircuit(w http.ResponseWriter, r *http.Request) {
	s.circuitAction(w, r, s.client.CloseCircuit)
}

func (s *Server) circuitAction(w http.ResponseWriter, r *http.Request, act func(context.Context, string) (sluice.CircuitState, error)) {
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
	s.reply(w, r, okBody, act(r.Context(), r.PathValue("name")))
}
