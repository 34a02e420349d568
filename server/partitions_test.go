package server_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
)

// The queues page shows a fair queue's partitions with the largest
// backlog, with their running jobs against their caps, escaped.
func TestDashboardPartitions(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, err := sluice.NewClient(sluice.Config{Driver: d, Queues: map[string]sluice.QueueConfig{
			"tenants": {Concurrency: 4, Fair: true, MaxRunning: 7, MaxRunningPerPartition: 2,
				PartitionMaxRunning: map[string]int{"premium": 5}},
		}})
		require.NoError(t, err)
		h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
		require.NoError(t, err)
		u := newBrowser(t, newTestServer(t, h))
		require.Equal(t, http.StatusSeeOther, u.login(token))

		for part, n := range map[string]int{"premium": 3, "t<b>1": 2} {
			for range n {
				_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "export", Queue: "tenants", Partition: part})
				if part == "t<b>1" {
					// Not a valid partition: refused, nothing written.
					var in *sluice.InputError
					require.ErrorAs(t, err, &in)
					require.Equal(t, "partition", in.Field)
					continue
				}
				require.NoError(t, err)
			}
		}
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "export", Queue: "tenants", Partition: "acme"})
		require.NoError(t, err)
		// One of premium's jobs runs.
		jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "tenants", Limit: 1, Lease: 60e9, Token: "holder", Fair: true})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		running := jobs[0].Partition

		code, body, _ := u.get("/queues")
		require.Equal(t, http.StatusOK, code)
		i := strings.Index(body, `id="partitions"`)
		require.Positive(t, i, "no partitions table:\n%s", body)
		table := body[i:]
		table = table[:strings.Index(table, "</table>")]
		rows := strings.Split(table, "<tr>")[2:] // after the header row
		require.Len(t, rows, 2, table)
		cells := func(row string) []string {
			var out []string
			for _, c := range strings.Split(row, "<td")[1:] {
				c = c[strings.Index(c, ">")+1:]
				out = append(out, html.UnescapeString(strings.TrimSpace(c[:strings.Index(c, "</td>")])))
			}
			return out
		}
		want := map[string][]string{
			"premium": {"tenants", "yes", "1 / 7", "premium", "3", "0 / 5"},
			"acme":    {"tenants", "yes", "1 / 7", "acme", "1", "0 / 2"},
		}
		want[running][4] = map[string]string{"premium": "2", "acme": "0"}[running]
		want[running][5] = map[string]string{"premium": "1 / 5", "acme": "1 / 2"}[running]
		for _, r := range rows {
			got := cells(r)
			require.Len(t, got, 6, r)
			require.Equal(t, want[got[3]], got, "partition %s", got[3])
		}
	})
}
