package sluice_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Every operator action of the Client records one audit entry as the
// actor in its context, with its target and how many it changed; the
// same actions without an actor (the application's own code) and
// enqueues record nothing.
func TestOperatorActionsAudited(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	c, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{
		"mail": {}, "pdf": {Circuit: sluice.Circuit{Threshold: 3}}}})
	require.NoError(t, err)
	entries := func() []sluicetype.AuditEntry {
		t.Helper()
		es, err := c.Audit(ctx, sluice.AuditParams{Limit: sluice.MaxAuditList})
		require.NoError(t, err)
		return es
	}

	// Without an actor: nothing recorded.
	j, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail"})
	require.NoError(t, err)
	require.NoError(t, c.Cancel(ctx, j.ID))
	require.NoError(t, c.PauseQueue(ctx, "default"))
	require.Empty(t, entries())

	as := sluice.WithActor(ctx, sluice.Actor{Name: "ops", Source: sluicetype.AuditAPI, Address: "192.0.2.9"})
	require.NoError(t, c.Retry(as, j.ID))
	require.NoError(t, c.Cancel(as, j.ID))
	_, err = c.EnqueueMany(as, []sluice.EnqueueParams{{Type: "mail", Key: "a"}, {Type: "mail", Key: "b"}})
	require.NoError(t, err)
	n, err := c.Bulk(as, sluicetype.BulkCancel, sluicetype.ListParams{Status: sluicetype.StatusPending, Type: "mail"}, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	_, err = c.RetryFailed(as, "mail")
	require.NoError(t, err)
	_, err = c.Purge(as, sluicetype.StatusCancelled, -time.Hour)
	require.NoError(t, err)
	require.NoError(t, c.ResumeQueue(as, "default"))
	_, err = c.OpenCircuit(as, "pdf")
	require.NoError(t, err)
	_, err = c.CloseCircuit(as, "pdf")
	require.NoError(t, err)
	// A refused action records nothing.
	require.Error(t, c.Retry(as, 999999))

	type row struct {
		action, target string
		affected       int64
	}
	var got []row
	for _, e := range entries() {
		require.Equal(t, "ops", e.Actor)
		require.Equal(t, "api", e.Source)
		require.Equal(t, "192.0.2.9", e.Address)
		got = append([]row{{e.Action, e.Target, e.Affected}}, got...)
	}
	require.Equal(t, []row{
		{"job.retry", "job " + strconv.FormatInt(j.ID, 10), 1},
		{"job.cancel", "job " + strconv.FormatInt(j.ID, 10), 1},
		{"jobs.cancel", "status=pending type=mail", 2},
		{"failed.retry", "failed jobs of type mail", 0},
		{"jobs.purge", "status=cancelled older_than=-1h0m0s", 3},
		{"queue.resume", "queue default", 1},
		{"circuit.open", "type pdf", 1},
		{"circuit.close", "type pdf", 1},
	}, got)

	es, err := c.Audit(ctx, sluice.AuditParams{Action: "job.cancel", Within: time.Hour})
	require.NoError(t, err)
	require.Len(t, es, 1)
	_, err = c.Audit(ctx, sluice.AuditParams{Limit: sluice.MaxAuditList + 1})
	require.Error(t, err)

	// Text is made what every driver stores: cut to length, NUL and
	// invalid UTF-8 spelled out.
	long := sluice.WithActor(ctx, sluice.Actor{Name: strings.Repeat("é", 300), Source: "api", Address: "a\x00b\xff"})
	require.NoError(t, c.PauseQueue(long, "default"))
	es, err = d.ListAudit(ctx, driver.ListAuditParams{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", sluicetype.MaxAuditActor/2), es[0].Actor)
	require.Equal(t, "a\\x00b\uFFFD", es[0].Address)
}
