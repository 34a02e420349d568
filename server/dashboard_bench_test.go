package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// BenchmarkDashboardPages measures each page on a table of 1,000,000
// finished jobs (the size). Run: go test ./server -run '^$' -bench DashboardPages -benchtime 20x
func BenchmarkDashboardPages(b *testing.B) {
	const rows = 1_000_000
	for _, name := range testdb.Names {
		b.Run(name, func(b *testing.B) {
			d, tg := testdb.OpenURL(b, name)
			ctx := context.Background()
			jobs := tg.Prefix + "jobs"
			var fill []string
			switch name {
			case "sqlite":
				fill = []string{"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < " + fmt.Sprint(rows) + ") " +
					"INSERT INTO " + jobs + " (queue, type, payload, status, attempts, finished_at) SELECT 'q' || (i % 4), 'type' || (i % 20), '{\"n\":' || i || '}', " +
					"CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'success' END, 1, strftime('%Y-%m-%d %H:%M:%f', 'now') FROM s", "ANALYZE"}
			case "mysql":
				// MariaDB caps recursive CTEs at 1,000 iterations; six
				// joined digit tables make the million instead.
				digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
				fill = []string{"INSERT INTO " + jobs + " (queue, type, payload, status, attempts, finished_at) " +
					"SELECT CONCAT('q', i % 4), CONCAT('type', i % 20), CONCAT('{\"n\":', i, '}'), IF(i % 10 = 0, 'failed', 'success'), 1, UTC_TIMESTAMP(6) FROM " +
					"(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * g.d + 1 AS i FROM " +
					digits + " a, " + digits + " b, " + digits + " c, " + digits + " e, " + digits + " f, " + digits + " g) s",
					"ANALYZE TABLE " + jobs}
			default:
				fill = []string{"INSERT INTO " + jobs + " (queue, type, payload, status, attempts, finished_at) SELECT 'q' || (i % 4), 'type' || (i % 20), ('{\"n\":' || i || '}')::jsonb, " +
					"CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'success' END, 1, now() FROM generate_series(1, " + fmt.Sprint(rows) + ") i", "VACUUM ANALYZE " + jobs}
			}
			for _, q := range fill {
				if _, err := d.DB().ExecContext(ctx, q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			_, base := dashServer(b, d, "nightly")
			u := newBrowser(b, base)
			if u.login(token) != http.StatusSeeOther {
				b.Fatal("login failed")
			}
			// Besides every page: a payload search (a bounded scan of the
			// newest 1,000 rows), bulk confirmations (counts bounded at
			// 1,001 rows), and the live snapshot.
			for _, p := range append(dashPages, "/jobs?status=success", "/jobs?status=failed&after=500000", "/jobs/777",
				"/jobs?field=n&value=999990", "/jobs?type=type3&field=n&value=3", "/jobs/bulk?action=retry", "/jobs/bulk?action=delete&type=type3",
				"/jobs/bulk?action=retry&field=n&value=999990", "/live.json") {
				b.Run(strings.ReplaceAll(p, "/", "_"), func(b *testing.B) {
					start := time.Now()
					for b.Loop() {
						code, _, _ := u.get(p)
						require.Equal(b, http.StatusOK, code, p)
					}
					b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/page")
				})
			}
		})
	}
}
