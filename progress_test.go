package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// What a Go handler and a command report lands on the job's row, and a
// failed attempt's last report on its history entry; a command's bad
// progress lines are skipped without failing its job.
func TestProgressThroughTheWorker(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("command handlers need a Unix system")
	}
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		goHandler := sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
			for i := range int64(100) {
				j.Progress(i+1, 100, "rows")
			}
			if j.Attempt == 1 {
				return errors.New("first attempts fail")
			}
			j.Progress(7, 7, "second try")
			return nil
		})
		cmd, err := command.New(command.Config{Argv: []string{"sh", "-c", `
			fd=$SLUICE_PROGRESS_FD
			echo '{"done":1,"total":3,"message":"one"}' >&$fd
			echo 'not json' >&$fd
			echo '{"total":3}' >&$fd
			echo '{"done":3,"total":3,"message":"all three"}' >&$fd`}})
		require.NoError(t, err)
		c := startClient(t, d, 2, map[string]sluice.Type{
			"go":  {Backoff: fastRetry, Handler: goHandler},
			"cmd": {Handler: cmd},
		})

		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "go"})
		require.NoError(t, err)
		j := waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		require.Equal(t, &sluicetype.Progress{Done: 7, Total: 7, Message: "second try", At: j.Progress.At}, j.Progress)
		require.False(t, j.Progress.At.IsZero())
		require.Len(t, j.History, 2)
		require.Equal(t, &sluicetype.Progress{Done: 100, Total: 100, Message: "rows"}, j.History[0].Progress,
			"the failed attempt's entry keeps its last report")

		r, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "cmd"})
		require.NoError(t, err)
		j = waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		require.NotNil(t, j.Progress)
		require.Equal(t, [2]int64{3, 3}, [2]int64{j.Progress.Done, j.Progress.Total})
		require.Equal(t, "all three", j.Progress.Message)
	})
}

// A webhook request carries its attempt's progress token, with which the
// receiver's report is written while the job runs; another attempt's
// token is refused.
func TestWebhookProgressToken(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		var c *sluice.Client
		reported := make(chan error, 2)
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := context.Background()
			id, tok := int64(0), r.Header.Get("X-Sluice-Progress-Token")
			_, _ = fmt.Sscan(r.Header.Get("X-Sluice-Job-Id"), &id)
			reported <- c.ReportProgress(ctx, id, sluicetype.ProgressToken("another attempt", id), 1, 2, "stale")
			reported <- c.ReportProgress(ctx, id, tok, 2, 2, "from the receiver")
		}))
		defer recv.Close()
		h, err := webhook.New(webhook.Config{URL: recv.URL})
		require.NoError(t, err)
		c = startClient(t, d, 1, map[string]sluice.Type{"hook": {Handler: h}})
		r, err := c.Enqueue(context.Background(), sluice.EnqueueParams{Type: "hook"})
		require.NoError(t, err)
		j := waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		require.ErrorIs(t, <-reported, sluicetype.ErrWrongState, "another attempt's token was accepted")
		require.NoError(t, <-reported)
		require.Equal(t, "from the receiver", j.Progress.Message)
	})
}
