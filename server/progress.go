package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/worker"
)

// progressPattern is the one route a webhook receiver calls back on: it
// is authenticated by the attempt's progress token (X-Sluice-Progress-Token,
// sluicetype.ProgressToken) instead of an operator's token, which a
// receiver never holds.
const progressPattern = "POST /v1/jobs/{id}/progress"

// progressHeader carries the attempt's progress token, as the webhook
// handler sends it to the receiver.
const progressHeader = "X-Sluice-Progress-Token"

// progressBody is the body of POST /v1/jobs/{id}/progress.
type progressBody struct {
	Done    *int64 `json:"done"`
	Total   int64  `json:"total"`
	Message string `json:"message"`
}

// progressWrites coalesces the reports of each job as the worker does for
// its own handlers: the first is written at once, later ones within
// worker.ProgressEvery of the last write are kept (the latest wins) and
// written when it has passed, so a chatty receiver cannot flood the
// database.
type progressWrites struct {
	mu   sync.Mutex
	jobs map[int64]*progressSlot // jobs written within the last interval
}

type progressSlot struct {
	pending *progressReport // the latest report not yet written
	// completeWritten: a report that completed its total was written out
	// of turn in this slot (see reportProgress); another one waits.
	completeWritten bool
}

type progressReport struct {
	token       string
	done, total int64
	message     string
}

// reportProgress is POST /v1/jobs/{id}/progress: 200 when the report was
// written, 202 when it was accepted for the next write, 409 for a token
// that is not the running attempt's (a stale attempt's included).
func (s *Server) reportProgress(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tok := r.Header.Get(progressHeader)
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "authorization: missing; send the attempt's "+progressHeader+" as the webhook request carried it")
		return
	}
	b, err := s.readBody(w, r)
	var body progressBody
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(&body); derr != nil {
			var te *json.UnmarshalTypeError
			if errors.As(derr, &te) {
				err = badRequest("%s: got a JSON %s, want %s", te.Field, te.Value, te.Type)
			} else {
				err = badRequest("body: %v", derr)
			}
		} else if body.Done == nil {
			err = badRequest("done: missing; want {\"done\":N,\"total\":N,\"message\":\"...\"}")
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep := &progressReport{token: tok, done: *body.Done, total: body.Total, message: body.Message}
	// The token is checked with every report, written now or later: one
	// that is not the running attempt's is refused at once.
	if err := s.client.CheckProgress(r.Context(), id, tok, rep.done, rep.total); err != nil {
		s.fail(w, r, err)
		return
	}
	// A report that completes its total is written at once, once per
	// slot: it is often a receiver's last, sent just before its answer
	// ends the attempt, and held for the next write it would find the
	// attempt over and be lost (the worker likewise writes a handler's
	// last report when it returns). Writes stay bounded: at most one more
	// per job per interval.
	complete := rep.total > 0 && rep.done >= rep.total
	s.progress.mu.Lock()
	if slot := s.progress.jobs[id]; slot != nil {
		if !complete || slot.completeWritten {
			slot.pending = rep
			s.progress.mu.Unlock()
			writeJSON(w, http.StatusAccepted, map[string]bool{"written": false})
			return
		}
		slot.completeWritten, slot.pending = true, nil
		s.progress.mu.Unlock()
		err = s.client.ReportProgress(r.Context(), id, rep.token, rep.done, rep.total, rep.message)
		s.reply(w, r, map[string]bool{"written": true}, err)
		return
	}
	s.progress.jobs[id] = &progressSlot{completeWritten: complete}
	s.progress.mu.Unlock()
	err = s.client.ReportProgress(r.Context(), id, rep.token, rep.done, rep.total, rep.message)
	time.AfterFunc(worker.ProgressEvery, func() { s.flushProgress(id) })
	s.reply(w, r, map[string]bool{"written": true}, err)
}

// flushProgress writes the report a job's receiver sent since the last
// write, if any, and keeps the job's slot for another interval; a job
// with nothing pending leaves the map.
func (s *Server) flushProgress(id int64) {
	s.progress.mu.Lock()
	slot := s.progress.jobs[id]
	rep := slot.pending
	if rep == nil {
		delete(s.progress.jobs, id)
		s.progress.mu.Unlock()
		return
	}
	slot.pending = nil
	s.progress.mu.Unlock()
	// Its request is answered already: the write gets a bound of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.client.ReportProgress(ctx, id, rep.token, rep.done, rep.total, rep.message); err != nil {
		// The attempt ended or lost its lease since: its receiver's late
		// report has nowhere to go.
		s.log.Debug("coalesced progress report not written", "job_id", id, "err", err)
	}
	time.AfterFunc(worker.ProgressEvery, func() { s.flushProgress(id) })
}
