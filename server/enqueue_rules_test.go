package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/rulestest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestEnqueueRulesAPI drives testdata/enqueue_rules.json through POST
// /v1/jobs, and every refused case as the second element of POST
// /v1/jobs/many: 201 for a good request, 400 naming the field for a bad
// one, never a 5xx, and nothing written by a refusal, on every database.
func TestEnqueueRulesAPI(t *testing.T) {
	cases := rulestest.Load(t)
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		post := func(path string, body []byte) response {
			req, err := http.NewRequest("POST", a.srv.URL+path, bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+a.tok)
			req.Header.Set("Content-Type", "application/json")
			return a.send(req)
		}
		written := 0
		for _, tc := range cases {
			body := tc.Body(t)
			r := post("/v1/jobs", body)
			if tc.OK {
				require.Equal(t, http.StatusCreated, r.code, "%s: %s", tc.Name, r.raw)
				written++
			} else {
				require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.Name, r.raw)
				msg, _ := r.body["error"].(string)
				tc.RequireRefusal(t, "", msg)
			}
			require.Equal(t, written, a.rows(), "%s: rows written", tc.Name)

			if tc.OK || tc.Field == "body" {
				continue
			}
			batch := append(append([]byte(`[{"type":"good"},`), body...), ']')
			r = post("/v1/jobs/many", batch)
			require.Equal(t, http.StatusBadRequest, r.code, "%s in a batch: %s", tc.Name, r.raw)
			msg, _ := r.body["error"].(string)
			require.True(t, strings.HasPrefix(msg, "[1]."), "%s in a batch: %q names no index", tc.Name, msg)
			tc.RequireRefusal(t, "[1].", msg)
			require.Equal(t, written, a.rows(), "%s in a batch: rows written", tc.Name)
		}
	})
}
