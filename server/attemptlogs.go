package server

import (
	"math"
	"net/http"

	"github.com/sluicehq/sluice/sluicetype"
)

// jobLogs is GET /v1/jobs/{id}/logs: the logs kept of the job's attempts,
// in attempt order, or of one with ?attempt=N (docs/http-api.md).
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	if err := s.onlyParams(r, "attempt"); err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := jobID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ints := intParams{r: r}
	attempt := ints.get("attempt", 0, 1, math.MaxInt32)
	if ints.err != nil {
		s.fail(w, r, ints.err)
		return
	}
	logs, err := s.client.AttemptLogs(r.Context(), id, int(attempt))
	if err == nil && len(logs) == 0 {
		// No logs from a job that is gone is a 404, as GET /v1/jobs/{id};
		// only then is the job read.
		_, err = s.client.Job(r.Context(), id)
	}
	s.reply(w, r, struct {
		Logs []sluicetype.AttemptLog `json:"logs"`
	}{logs}, err)
}
