package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestDeadlineAPI: a job's deadline goes in through POST /v1/jobs and
// comes back in its JSON; a type's deadline applies to a job without
// one; a past deadline is a 400 naming the field and writes nothing; and
// once the sweep has cancelled a job past its deadline, its JSON says why.
func TestDeadlineAPI(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, map[string]sluice.Type{"report": {Deadline: 10 * time.Minute}}, nil)
		deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		r := a.do("POST", "/v1/jobs", fmt.Sprintf(`{"type":"other","deadline":%q}`, deadline.Format(time.RFC3339)))
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%v", r.body["id"]), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, deadline.Format(time.RFC3339), r.body["deadline"], r.raw)

		// The type's deadline counts from run_at.
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		r = a.do("POST", "/v1/jobs", fmt.Sprintf(`{"type":"report","run_at":%q}`, runAt.Format(time.RFC3339)))
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%v", r.body["id"]), "")
		require.Equal(t, runAt.Add(10*time.Minute).Format(time.RFC3339), r.body["deadline"], r.raw)

		rows := a.rows()
		r = a.do("POST", "/v1/jobs", `{"type":"other","deadline":"2001-01-01T00:00:00Z"}`)
		require.Equal(t, http.StatusBadRequest, r.code, r.raw)
		require.Contains(t, r.body["error"], "deadline: 2001-01-01T00:00:00Z is in the past", r.raw)
		require.Equal(t, rows, a.rows(), "a refusal writes nothing")

		// A job past its deadline, as an application's plain INSERT may
		// write one (the rules refuse it on sluice's own paths): the
		// sweep cancels it, and its JSON gives the reason.
		res, err := d.Insert(t.Context(), driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "default", Type: "other",
			Dedupe: "permanent", Payload: []byte(`{}`), MaxAttempts: 5, Deadline: time.Now().Add(-time.Hour)}}})
		require.NoError(t, err)
		n, err := a.c.SweepDeadlines(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%d", res[0].ID), "")
		require.Equal(t, "cancelled", r.body["status"], r.raw)
		require.Contains(t, r.body["last_error"], "passed before the job started", r.raw)
	})
}
