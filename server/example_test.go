package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/server"
)

// exampleToken is the API token of these examples. A real one comes from a
// secret store or the environment: 32 random bytes, hex-encoded, such as
// `openssl rand -hex 32` prints.
const exampleToken = "93d78090cd03889204a28e158089669a2babeb7f92ebc5250669b7c289cf37fb"

// exampleClient opens a migrated SQLite database in a fresh directory and
// returns a client on it with the given types.
func exampleClient(types map[string]sluice.Type) (*sluice.Client, func()) {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "sluice.db"), dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	client, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
	if err != nil {
		log.Fatal(err)
	}
	return client, func() { d.Close(); os.RemoveAll(dir) }
}

// exampleCall sends one request, with the Bearer token given if any, and
// prints the answer's status and JSON body.
func exampleCall(method, url, body, bearer string) {
	status, b := send(method, url, body, bearer)
	fmt.Println(status, strings.TrimSpace(string(b)))
}

// send sends one request, with the Bearer token given if any, and returns
// the answer's status and body.
func send(method, url, body, bearer string) (int, []byte) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	return resp.StatusCode, b
}

// Serve the HTTP API with a token, and enqueue over HTTP as any language
// can: the first job is created (201), the same business key again answers
// with the first job's id (200), a request without the token (401) or with
// a wrong one (403) is refused, and a bad job request (400) names the field.
func ExampleNew() {
	client, done := exampleClient(nil)
	defer done()
	api, err := server.New(server.Config{Client: client, Tokens: []string{exampleToken}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(api) // in production: http.Server{Addr: ..., Handler: api}
	defer srv.Close()

	job := `{"type":"send_email","key":"welcome:42","payload":{"user_id":42}}`
	exampleCall("POST", srv.URL+"/v1/jobs", job, exampleToken)
	exampleCall("POST", srv.URL+"/v1/jobs", job, exampleToken)
	exampleCall("POST", srv.URL+"/v1/jobs", job, "")
	exampleCall("POST", srv.URL+"/v1/jobs", job, "c0ffee"+exampleToken[6:])
	exampleCall("POST", srv.URL+"/v1/jobs", `{"type":"send_email","priority":"high"}`, exampleToken)
	// Output:
	// 201 {"id":1,"duplicate":false}
	// 200 {"id":1,"duplicate":true}
	// 401 {"error":"authorization: missing; send Authorization: Bearer TOKEN"}
	// 403 {"error":"authorization: token not accepted"}
	// 400 {"error":"priority: want an integer, got a string"}
}

// Mount the API in an application's own mux, beside its routes, and run
// due jobs from cron over HTTP: POST /v1/run is one bounded pass with the
// handlers of the client the server was given.
func ExampleNew_mount() {
	client, done := exampleClient(map[string]sluice.Type{
		"greet": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
			var p struct{ Name string }
			if err := job.Decode(&p); err != nil {
				return sluice.Permanent(err)
			}
			job.SetResult("hello " + p.Name)
			return nil
		})},
	})
	defer done()
	api, err := server.New(server.Config{Client: client, Tokens: []string{exampleToken}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/ping", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") })
	mux.Handle("/v1/", api) // the JSON API; "/" would add the dashboard and /metrics
	srv := httptest.NewServer(mux)
	defer srv.Close()

	exampleCall("GET", srv.URL+"/app/ping", "", "")
	exampleCall("POST", srv.URL+"/v1/jobs/many", `[{"type":"greet","payload":{"name":"Ann"}},{"type":"greet","payload":{"name":"Bob"}}]`, exampleToken)
	exampleCall("POST", srv.URL+"/v1/run?max_seconds=30", "", exampleToken)
	_, b := send("GET", srv.URL+"/v1/jobs?status=success", "", exampleToken)
	var page struct {
		Jobs []struct{ Result string }
	}
	if err := json.Unmarshal(b, &page); err != nil {
		log.Fatal(err)
	}
	for _, j := range page.Jobs {
		fmt.Println(j.Result)
	}
	// Output:
	// 200 pong
	// 200 {"inserted":2,"duplicates":0,"ids":[1,2]}
	// 200 {"ok":true,"done":2,"retried":0,"failed":0,"requeued":0}
	// hello Bob
	// hello Ann
}
