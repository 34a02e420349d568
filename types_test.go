package sluice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStartRecordsTypeSettings: a Go application's Client.Start records
// its types' settings, so that its own plain-SQL enqueues take them; a type
// it does not configure gets the same defaults as EnqueueParams (the insert
// trigger spells them in SQL, this test holds them to the Go constants).
func TestStartRecordsTypeSettings(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		ctx := context.Background()
		noop := sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })
		clienttest.Start(t, sluice.Config{Driver: d, PollMax: 50 * time.Millisecond,
			Types:  map[string]sluice.Type{"send_mail": {Handler: noop, Queue: "mail", MaxAttempts: 2, Dedupe: sluicetype.DedupeActive}},
			Queues: map[string]sluice.QueueConfig{"mail": {Concurrency: 1}}})
		insert := func(typ string) *sluicetype.JobRow {
			t.Helper()
			stmt := fmt.Sprintf("INSERT INTO %sjobs (type) VALUES ('%s')", tg.Prefix, typ)
			var id int64
			if name == "mysql" {
				res, err := d.DB().ExecContext(ctx, stmt)
				require.NoError(t, err)
				id, err = res.LastInsertId()
				require.NoError(t, err)
			} else {
				require.NoError(t, d.DB().QueryRowContext(ctx, stmt+" RETURNING id").Scan(&id))
			}
			j, err := d.GetJob(ctx, id)
			require.NoError(t, err)
			return j
		}
		j := insert("send_mail")
		require.Equal(t, "mail/2/active", fmt.Sprintf("%s/%d/%s", j.Queue, j.MaxAttempts, j.Dedupe))
		j = insert("not_configured")
		require.Equal(t, fmt.Sprintf("%s/%d/%s", sluice.DefaultQueue, sluice.DefaultMaxAttempts, sluicetype.DedupePermanent),
			fmt.Sprintf("%s/%d/%s", j.Queue, j.MaxAttempts, j.Dedupe))
	})
}
