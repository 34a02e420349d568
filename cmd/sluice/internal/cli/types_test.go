package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// typesConfig is a config whose send_mail type runs in the mail queue with
// maxAttempts attempts.
func typesConfig(t *testing.T, url string, maxAttempts int) string {
	return proctest.Config(t, url, fmt.Sprintf(`queues:
  mail: { concurrency: 1 }
types:
  send_mail:
    command: ["true"]
    queue: mail
    max_attempts: %d
    dedupe: active
`, maxAttempts))
}

// TestPlainSQLEnqueueTakesTypeSettings: an application's own INSERT of a
// job, naming only its type, in its own transaction, takes the queue,
// max_attempts and dedupe sluice.yaml gives the type, as `sluice enqueue`
// does: `sluice migrate --config` records them, and a process that runs
// jobs (here `sluice run`) records the settings of its config. Before,
// such a job ran in the default queue with 5 attempts.
func TestPlainSQLEnqueueTakesTypeSettings(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		ctx := context.Background()
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		table := tg.Prefix + "jobs"
		insert := func(q driver.Querier, cols, values string) int64 {
			t.Helper()
			stmt := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, cols, values)
			var id int64
			if name == "mysql" {
				res, err := q.ExecContext(ctx, stmt)
				require.NoError(t, err)
				id, err = res.LastInsertId()
				require.NoError(t, err)
			} else {
				require.NoError(t, q.QueryRowContext(ctx, stmt+" RETURNING id").Scan(&id))
			}
			return id
		}
		settings := func(id int64) string {
			t.Helper()
			j, err := d.GetJob(ctx, id)
			require.NoError(t, err)
			return fmt.Sprintf("%s/%d/%s", j.Queue, j.MaxAttempts, j.Dedupe)
		}

		cfg := typesConfig(t, tg.URL, 2)
		r := run(t, env, "", "--config", cfg, "migrate")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, "job type settings written from "+cfg+": 1")

		tx, err := d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		mail := insert(tx, "type, payload", `'send_mail', '{"to":"a@example.com"}'`)
		explicit := insert(tx, "type, queue, max_attempts, dedupe", "'send_mail', 'default', 5, 'permanent'")
		other := insert(tx, "type", "'no_such_type'")
		require.NoError(t, tx.Commit())
		require.Equal(t, "mail/2/active", settings(mail), "the type's settings from sluice.yaml")
		require.Equal(t, "default/5/permanent", settings(explicit), "values the INSERT gives win")
		require.Equal(t, "default/5/permanent", settings(other), "a type the config does not know keeps the defaults")

		tx, err = d.DB().BeginTx(ctx, nil)
		require.NoError(t, err)
		gone := insert(tx, "type", "'send_mail'")
		require.NoError(t, tx.Rollback())
		_, err = d.GetJob(ctx, gone)
		require.ErrorIs(t, err, sluicetype.ErrNotFound, "a rolled-back enqueue leaves nothing")

		// A pass run from a changed config records its settings.
		r = run(t, env, "", "--config", typesConfig(t, tg.URL, 3), "run", "--queue", "mail", "--max-seconds", "5")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Equal(t, "mail/3/active", settings(insert(d.DB(), "type", "'send_mail'")))
	})
}
