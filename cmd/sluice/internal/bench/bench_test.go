package bench_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestSmoke runs a small bench, in both modes, on every database, so that
// the bench cannot rot between the runs of bench/compare.sh.
func TestSmoke(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, url, prefix, ctx := benchDB(t, name)

		bulk := run(t, ctx, bench.Config{URL: url, Prefix: prefix, Jobs: 1000, Concurrency: 50, FinishedRows: 2500})
		if bulk["mode"] != "bulk" || bulk["finished_rows"] != 2500.0 {
			t.Errorf("bulk run reported %v", bulk)
		}
		if p50, p99 := bulk["latency_p50_ms"].(float64), bulk["latency_p99_ms"].(float64); p50 <= 0 || p99 < p50 {
			t.Errorf("bulk latency p50 %v ms, p99 %v ms", p50, p99)
		}

		lat := run(t, ctx, bench.Config{URL: url, Prefix: prefix, Jobs: 100, Concurrency: 10, Latency: true, Rate: 500})
		if lat["mode"] != "latency" {
			t.Errorf("latency run reported %v", lat)
		}
		if p50 := lat["latency_p50_ms"].(float64); p50 <= 0 || p50 > 1000 {
			t.Errorf("latency mode p50 %v ms", p50)
		}
		if lat["latency_source"] != bench.SourceInProcess || lat["rate"] != 500.0 {
			t.Errorf("latency run reported %v", lat)
		}
		// Jobs from another client and from a plain INSERT, which
		// nothing in this process announces to the workers.
		for _, src := range []string{bench.SourceClient, bench.SourceSQL} {
			m := run(t, ctx, bench.Config{URL: url, Prefix: prefix, Jobs: 5, Concurrency: 2, Latency: true,
				Source: src, Gap: 20 * time.Millisecond})
			if m["mode"] != "latency" || m["latency_source"] != src || m["rate"] != nil {
				t.Errorf("latency run from %s reported %v", src, m)
			}
		}

		// The bench drops its tables when done.
		var n int
		var q string
		switch name {
		case "sqlite":
			q = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND substr(name, 1, length(?)) = ?"
		case "mysql":
			q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND LEFT(table_name, CHAR_LENGTH(?)) = ?"
		default:
			q = "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND left(tablename, length($1)) = $2"
		}
		if err := d.DB().QueryRowContext(ctx, q, prefix, prefix).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d bench tables left under %s", n, prefix)
		}
	})
}

// TestBadSource checks that an unknown latency source is refused by name
// before the bench touches the database.
func TestBadSource(t *testing.T) {
	db := t.TempDir() + "/b.db"
	_, err := bench.Run(context.Background(), bench.Config{URL: "sqlite:" + db, Jobs: 1, Concurrency: 1,
		Latency: true, Source: "php"})
	if err == nil || !strings.Contains(err.Error(), `latency source "php"`) {
		t.Fatalf("bench with source php: %v", err)
	}
	if _, serr := os.Stat(db); serr == nil {
		t.Errorf("a refused bench created its database")
	}
}

// benchDB opens name's database for a bench test, skipping (or failing in
// CI) when the server is down. It returns the driver, the URL, a fresh
// prefix for the bench's own tables (not the driver's: the bench drops its
// tables when done, and parallel test runs must never drop each other's)
// and a context that ends after 2 minutes.
func benchDB(t *testing.T, name string) (driver.Driver, string, string, context.Context) {
	d, tg := testdb.OpenURL(t, name)
	// A guard against a hang, not a judgement of speed: the smoke runs
	// share two cores with CI's timing lanes, at a lower priority, and
	// once took over 2 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return d, tg.URL, testdb.Prefix(), ctx
}

// run runs the bench and returns its result as the JSON that `sluice bench
// --json` prints, checking the keys shared with riverpeer.
func run(t *testing.T, ctx context.Context, cfg bench.Config) map[string]any {
	t.Helper()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("bench %+v: %v", cfg, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"insert_per_s", "work_per_s", "latency_p50_ms", "latency_p99_ms", "peak_rss_mb", "jobs", "concurrency", "db"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %s has no %q", b, k)
		}
	}
	if m["insert_per_s"].(float64) <= 0 || m["work_per_s"].(float64) <= 0 {
		t.Errorf("JSON %s: want positive insert_per_s and work_per_s", b)
	}
	if m["succeeded"] != float64(cfg.Jobs) || m["jobs"] != float64(cfg.Jobs) {
		t.Errorf("JSON %s: want all %d jobs finished", b, cfg.Jobs)
	}
	return m
}
