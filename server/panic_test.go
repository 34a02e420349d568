package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

func TestPanicIs500WithoutDetail(t *testing.T) {
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite")})
	require.NoError(t, err)
	s, err := New(Config{Client: c})
	require.NoError(t, err)
	s.mux.HandleFunc("GET /v1/boom", func(http.ResponseWriter, *http.Request) { panic("secret internal detail") })
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/v1/boom", nil))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.JSONEq(t, `{"error":"internal error"}`, w.Body.String())
}
