package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCLIAudit cancels and retries a job with `sluice jobs`: each is an
// audit entry of cli:<os user> from this host, which `sluice audit`
// lists in a table, filtered and as JSON. An entry whose text holds
// terminal escapes prints them spelled out.
func TestCLIAudit(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
	u, err := user.Current()
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)

	r := run(t, env, "", "enqueue", "order_sync")
	require.Equal(t, 0, r.Code, r.Stderr)
	var res struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
	es, err := d.ListAudit(context.Background(), driver.ListAuditParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, es, "an enqueue is not an operator action")

	r = run(t, env, "", "jobs", "cancel", fmt.Sprint(res.ID))
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "jobs", "retry", fmt.Sprint(res.ID))
	require.Equal(t, 0, r.Code, r.Stderr)

	es, err = d.ListAudit(context.Background(), driver.ListAuditParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, es, 2)
	for i, action := range []string{"job.retry", "job.cancel"} {
		require.Equal(t, "cli:"+u.Username, es[i].Actor)
		require.Equal(t, sluicetype.AuditCLI, es[i].Source)
		require.Equal(t, host, es[i].Address)
		require.Equal(t, action, es[i].Action)
		require.Equal(t, fmt.Sprintf("job %d", res.ID), es[i].Target)
	}

	r = run(t, env, "", "audit")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `ID\s+AT\s+ACTOR\s+SOURCE\s+ADDRESS\s+ACTION\s+TARGET\s+AFFECTED\n`, r.Stdout)
	require.Regexp(t, fmt.Sprintf(`cli:%s\s+cli\s+%s\s+job\.retry\s+job %d\s+1\n`, u.Username, host, res.ID), r.Stdout)
	require.Contains(t, r.Stdout, "job.cancel")

	r = run(t, env, "", "audit", "--action", "job.cancel", "--json", "--since", "1h")
	require.Equal(t, 0, r.Code, r.Stderr)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.Len(t, lines, 1)
	var e sluicetype.AuditEntry
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &e))
	require.Equal(t, "job.cancel", e.Action)

	r = run(t, env, "", "audit", "--actor", "someone-else")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.NotContains(t, r.Stdout, "job.")

	r = run(t, env, "", "audit", "--limit", "1")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, fmt.Sprintf("more: --before-id %d", es[0].ID))

	r = run(t, env, "", "batch", "pause", "backfill")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "audit", "--action", "batch.pause")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `cli:\S+\s+cli\s+\S+\s+batch\.pause\s+batch backfill\s+0\n`, r.Stdout)

	r = run(t, env, "", "audit", "--since", "soon")
	require.Equal(t, 2, r.Code, "bad input")
	require.Contains(t, r.Stderr, "--since")

	require.NoError(t, d.InsertAudit(context.Background(), driver.InsertAuditParams{Entry: sluicetype.AuditEntry{
		Actor: "evil\x1b]0;pwned\x07", Source: "api", Address: "a", Action: "queue.pause", Target: "queue \x1b[2J", Affected: 1}}))
	r = run(t, env, "", "audit")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.NotContains(t, r.Stdout, "\x1b")
	require.Contains(t, r.Stdout, `evil\x1b]0;pwned\x07`)
	require.Contains(t, r.Stdout, `queue \x1b[2J`)
}
