package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestProgressTimeoutAPI: a job's own progress_timeout goes in through
// POST /v1/jobs and comes back in its JSON as a duration; a job without
// one shows none; a bad one is a 400 naming the field and writes nothing.
func TestProgressTimeoutAPI(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		r := a.do("POST", "/v1/jobs", `{"type":"report","progress_timeout":"90s"}`)
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%v", r.body["id"]), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, "1m30s", r.body["progress_timeout"], r.raw)

		r = a.do("POST", "/v1/jobs", `{"type":"report"}`)
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%v", r.body["id"]), "")
		require.NotContains(t, r.body, "progress_timeout", r.raw)

		rows := a.rows()
		for _, bad := range []string{`"0s"`, `"-1m"`, `"soon"`} {
			r = a.do("POST", "/v1/jobs", `{"type":"report","progress_timeout":`+bad+`}`)
			require.Equal(t, http.StatusBadRequest, r.code, r.raw)
			require.Contains(t, r.body["error"], "progress_timeout: ", r.raw)
		}
		require.Equal(t, rows, a.rows(), "a refusal writes nothing")
	})
}

// TestDashboardJobProgressTimeout: the job page shows a job's own
// progress timeout.
func TestDashboardJobProgressTimeout(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	_, base := dashServer(t, d, "nightly")
	res, err := d.Insert(t.Context(), driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "default", Type: "mail", Dedupe: "permanent",
		Payload: []byte(`{}`), MaxAttempts: 5, ProgressTimeout: 5 * time.Minute}}})
	require.NoError(t, err)
	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	code, body, _ := u.get(fmt.Sprintf("/jobs/%d", res[0].ID))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="progress-timeout">stuck after 5m0s without a report</dd>`)
}
