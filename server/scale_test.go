package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestPagesAtScale fills each database, by SQL, with 10,001 queues that
// each hold a pending job in a partition, and one queue with 10,000
// partitions; every page, /v1/stats and /live.json must stay bounded.
// It logs the times; it asserts on sizes, which wall time on a loaded
// machine would make flaky.
func TestPagesAtScale(t *testing.T) {
	const queues, parts, queuesShown = 10_001, 10_000, 100
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		ctx := context.Background()
		jobs := tg.Prefix + "jobs"
		var fill []string
		switch name {
		case "sqlite":
			fill = []string{
				fmt.Sprintf("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) INSERT INTO %s (queue, type, payload, status, partition_key) SELECT 'q' || i, 't', '{}', 'pending', 'p' || (i %% 3) FROM s", queues, jobs),
				fmt.Sprintf("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) INSERT INTO %s (queue, type, payload, status, partition_key) SELECT 'big', 't', '{}', 'pending', 'p' || i FROM s", parts, jobs),
				"ANALYZE"}
		case "mysql":
			digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
			seq := "(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 1 AS i FROM " + digits + " a, " + digits + " b, " + digits + " c, " + digits + " e, " + digits + " f) s"
			fill = []string{
				fmt.Sprintf("INSERT INTO %s (queue, type, payload, status, partition_key) SELECT CONCAT('q', i), 't', '{}', 'pending', CONCAT('p', i %% 3) FROM %s WHERE i <= %d", jobs, seq, queues),
				fmt.Sprintf("INSERT INTO %s (queue, type, payload, status, partition_key) SELECT 'big', 't', '{}', 'pending', CONCAT('p', i) FROM %s WHERE i <= %d", jobs, seq, parts),
				"ANALYZE TABLE " + jobs}
		default:
			fill = []string{
				fmt.Sprintf("INSERT INTO %s (queue, type, payload, status, partition_key) SELECT 'q' || i, 't', '{}'::jsonb, 'pending', 'p' || (i %% 3) FROM generate_series(1, %d) i", jobs, queues),
				fmt.Sprintf("INSERT INTO %s (queue, type, payload, status, partition_key) SELECT 'big', 't', '{}'::jsonb, 'pending', 'p' || i FROM generate_series(1, %d) i", jobs, parts),
				"VACUUM ANALYZE " + jobs}
		}
		for _, q := range fill {
			_, err := d.DB().ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
		cd := &countingDriver{Driver: d}
		_, base := dashServer(t, cd, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		for _, p := range append(dashPages, "/live.json", "/queues?after=q5000", "/live.json?after=q5000") {
			u.get(p) // the first read fills caches
			cd.partitionReads.Store(0)
			start := time.Now()
			code, body, _ := u.get(p)
			took := time.Since(start)
			require.Equal(t, http.StatusOK, code, p)
			t.Logf("%s %s: %s, %d bytes", name, p, took.Round(time.Millisecond), len(body))
			require.Less(t, len(body), 512<<10, "%s: the page is bounded", p)
			// The Queues pages show the partitions of every queue on them
			// from one query, read afresh each time; no other page reads
			// them. Exact, so that a page that lost its partitions (0) fails
			// as surely as one that reads them queue by queue.
			want := int64(0)
			if strings.HasPrefix(p, "/queues") {
				want = 1
			}
			require.Equal(t, want, cd.partitionReads.Load(), "%s: one partition query for all queues shown, on the Queues pages only", p)
		}
		_, body, _ := u.get("/queues")
		require.Equal(t, queuesShown, strings.Count(body, "<tr data-queue="), "the Queues page shows one page of queues")
		next := regexp.MustCompile(`id="queues-next" href="/queues\?after=([^"]+)"`).FindStringSubmatch(body)
		require.NotNil(t, next, "the Queues page links its next page")
		_, body, _ = u.get("/queues?after=" + next[1])
		require.Equal(t, queuesShown, strings.Count(body, "<tr data-queue="))
		require.NotContains(t, body, `<tr data-queue="`+next[1]+`"`, "the next page starts after the last one shown")
		_, body, _ = u.get("/")
		require.True(t, strings.Contains(body, "busiest of 10002 queues"), "the overview says it shows only the busiest queues")
		// No worker ran: every queue is one nothing runs, and the warning
		// lists only the fullest.
		require.Regexp(t, `The 100 fullest of 100\d\d such queues`, body, "the overview bounds the queues nothing runs")
		cd.partitionReads.Store(0)
		start := time.Now()
		resp := get(t, base+"/v1/stats", token)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var st struct {
			Queues []struct {
				Queue      string
				Partitions []json.RawMessage
			}
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		t.Logf("%s /v1/stats: %s, %d queues", name, time.Since(start).Round(time.Millisecond), len(st.Queues))
		require.Len(t, st.Queues, queues+1)
		require.Equal(t, int64(1), cd.partitionReads.Load(), "/v1/stats: one partition query for all queues")
		big := 0
		for _, q := range st.Queues {
			if q.Queue == "big" {
				big++
				require.Len(t, q.Partitions, sluice.TopPartitions)
			}
		}
		require.Equal(t, 1, big, "/v1/stats lists the queue with %d partitions", parts)
		// Paged: every queue once, in pages of at most limit.
		seen, after := 0, ""
		for {
			resp := get(t, base+"/v1/stats?limit=1000&after="+after, token)
			var page struct {
				Queues    []struct{ Queue string }
				NextAfter string `json:"next_after"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
			resp.Body.Close()
			require.LessOrEqual(t, len(page.Queues), 1000)
			if len(page.Queues) > 0 {
				require.Greater(t, page.Queues[0].Queue, after)
			}
			seen += len(page.Queues)
			if page.NextAfter == "" {
				break
			}
			after = page.NextAfter
		}
		require.Equal(t, queues+1, seen)
		require.Equal(t, http.StatusBadRequest, get(t, base+"/v1/stats?limit=0", token).StatusCode)
	})
}

// countingDriver counts the partition reads a request makes.
type countingDriver struct {
	driver.Driver
	partitionReads atomic.Int64
}

func (c *countingDriver) PartitionStats(ctx context.Context, p driver.PartitionStatsParams) ([]sluicetype.PartitionStats, error) {
	c.partitionReads.Add(1)
	return c.Driver.PartitionStats(ctx, p)
}
