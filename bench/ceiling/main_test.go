package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// The ceiling's tests check that it is correct at tiny sizes on every
// database (each row claimed at most once, every claimed row completed,
// the table dropped), not how fast it is.

// target returns the database URL for name and a table name of its own,
// skipping (or failing, with SLUICE_TEST_REQUIRE_ALL=1) when the server
// does not answer.
func target(t *testing.T, name string) (string, string) {
	t.Helper()
	url := testdb.URL(name, t.TempDir())
	d, err := open(url, "unused")
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err = d.db.PingContext(ctx)
		cancel()
		d.db.Close()
	}
	if err != nil {
		if testdb.RequireAll() || name == "sqlite" {
			t.Fatalf("%s at %s: %v (SLUICE_TEST_REQUIRE_ALL=1: every database is required)", name, redact(url), err)
		}
		t.Skipf("%s unreachable at %s: %v", name, redact(url), err)
	}
	return url, testdb.Prefix() + "ceiling"
}

func results(t *testing.T, out []byte) []result {
	t.Helper()
	var rs []result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestCeiling(t *testing.T) {
	for _, name := range []string{"postgres", "mysql", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, table := target(t, name)
			ctx := t.Context()
			discard := slog.New(slog.NewTextHandler(io.Discard, nil))

			// One setting whose table is kept, with every claim's ids.
			const rows = 3000
			var mu sync.Mutex
			claims := map[int64]int{}
			var out bytes.Buffer
			cfg := config{URL: url, Table: table, Batches: []int{40}, Clients: []int{3}, Rows: rows,
				Duration: 1500 * time.Millisecond, JSON: true, Keep: true,
				OnClaim: func(ids []int64) {
					mu.Lock()
					defer mu.Unlock()
					for _, id := range ids {
						claims[id]++
					}
				}}
			d, err := open(url, table)
			if err != nil {
				t.Fatal(err)
			}
			defer d.db.Close()
			t.Cleanup(func() { d.drop(context.Background()) })
			if err := ceiling(ctx, cfg, &out, discard); err != nil {
				t.Fatal(err)
			}
			rs := results(t, out.Bytes())
			if len(rs) != 2 || !rs[1].Best || rs[0].Best {
				t.Fatalf("want a setting and the best, got %s", out.String())
			}
			r := rs[0]
			if r.DB != name || r.Batch != 40 || r.Clients != 3 || r.Rows != rows || r.Seconds <= 0 || r.Server == "" {
				t.Errorf("result %+v", r)
			}
			if r.Claimed == 0 || r.Completed != r.Claimed || r.JobsPerS <= 0 {
				t.Errorf("claimed %d, completed %d, %v jobs/s", r.Claimed, r.Completed, r.JobsPerS)
			}
			for id, n := range claims {
				if n != 1 || id < 1 || id > rows {
					t.Errorf("row %d claimed %d times", id, n)
				}
			}
			if int64(len(claims)) != r.Claimed {
				t.Errorf("%d distinct rows claimed, reported %d", len(claims), r.Claimed)
			}
			if r.RanDry && len(claims) != rows {
				t.Errorf("ran dry after claiming %d of %d rows", len(claims), rows)
			}
			// The table agrees: the claimed rows are done, the rest pending.
			counts := map[int]int64{}
			q, err := d.db.QueryContext(ctx, "SELECT status, COUNT(*) FROM "+table+" GROUP BY status")
			if err != nil {
				t.Fatal(err)
			}
			for q.Next() {
				var s int
				var n int64
				if err := q.Scan(&s, &n); err != nil {
					t.Fatal(err)
				}
				counts[s] = n
			}
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			if counts[done] != r.Completed || counts[running] != 0 || counts[pending] != rows-r.Completed {
				t.Errorf("table holds %v (status: rows), reported %d completed of %d", counts, r.Completed, rows)
			}
			if err := d.drop(ctx); err != nil {
				t.Fatal(err)
			}

			// The command's flags: every setting, then the best, and no table left.
			out.Reset()
			args := []string{"-db", url, "-table", table, "-batch", "1,50", "-clients", "1,2", "-rows", "4000", "-duration", "300ms", "-json"}
			if err := run(ctx, args, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			rs = results(t, out.Bytes())
			if len(rs) != 5 {
				t.Fatalf("want 4 settings and the best, got %s", out.String())
			}
			best := rs[0]
			for i, r := range rs[:4] {
				if r.Batch != []int{1, 1, 50, 50}[i] || r.Clients != []int{1, 2, 1, 2}[i] || r.Completed != r.Claimed || r.Completed > 4000 {
					t.Errorf("setting %d: %+v", i, r)
				}
				if r.JobsPerS > best.JobsPerS {
					best = r
				}
			}
			best.Best = true
			if rs[4] != best {
				t.Errorf("best %+v, want %+v", rs[4], best)
			}
			var n int
			if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err == nil {
				t.Errorf("the table is left with %d rows", n)
			}
		})
	}
}

// TestBadFlags checks that bad settings are refused before any database work.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-db", "redis://x"},
		{"-db", "sqlite:" + t.TempDir() + "/x.db", "-batch", "0"},
		{"-db", "sqlite:" + t.TempDir() + "/x.db", "-table", "x; DROP TABLE y"},
	} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestNoSluice keeps the ceiling free of sluice's own packages: it
// measures the database, not the queue.
func TestNoSluice(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(dep, "github.com/sluicehq/sluice") && dep != "github.com/sluicehq/sluice/bench/ceiling" {
			t.Errorf("imports %s", dep)
		}
	}
}

// TestScript runs bench/ceiling.sh at a tiny size on SQLite, so that the
// script cannot rot between full runs.
func TestScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	cmd := exec.Command("bash", "../ceiling.sh")
	cmd.Env = append(os.Environ(), "DBS=sqlite", "SQLITE_DIR="+t.TempDir(), "BATCHES=10 20", "CLIENTS=2",
		"DURATION=200ms", "ROWS=300", "TABLE="+testdb.Prefix()+"ceiling")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	rs := results(t, out)
	if len(rs) != 3 || rs[0].DB != "sqlite" || rs[1].Batch != 20 || !rs[2].Best {
		t.Fatalf("output %s", out)
	}
}

// TestReport feeds bench/compare_report.py a run's RESULTS with the
// ceiling and sluice's throughput, and one without the throughput: the
// fraction and its target, or n/a.
func TestReport(t *testing.T) {
	testdb.NeedTools(t, "bench report", "apt-get install -y python3", "python3")
	lines := []string{
		`pg-sluice	100	{"db": "postgres", "jobs": 1000, "concurrency": 100, "insert_per_s": 9000, "work_per_s": 30000}`,
		`pg-sluice	1000	{"db": "postgres", "jobs": 1000, "concurrency": 1000, "insert_per_s": 9000, "work_per_s": 45000}`,
		`mysql-sluice	100	{"db": "mysql", "jobs": 1000, "concurrency": 100, "insert_per_s": 9000, "work_per_s": 9000}`,
		`pg-ceiling	4	{"db": "postgres", "server": "PostgreSQL 15", "batch": 1000, "clients": 4, "rows": 9, "seconds": 1, "claimed": 9, "completed": 9, "jobs_per_s": 50000, "ran_dry": false}`,
		`pg-ceiling	1	{"db": "postgres", "server": "PostgreSQL 15", "batch": 100, "clients": 1, "rows": 9, "seconds": 1, "claimed": 9, "completed": 9, "jobs_per_s": 20000, "ran_dry": true}`,
		`mysql-ceiling	2	{"db": "mysql", "server": "MariaDB 10.11", "batch": 500, "clients": 2, "rows": 9, "seconds": 1, "claimed": 9, "completed": 9, "jobs_per_s": 10000, "ran_dry": false}`,
		"sqlite-ceiling	0	FAILED",
		// The held-back vacuum: 10 s intervals, the hold from 22 s to 52 s;
		// the intervals across its edges and the short tail belong to no phase.
		`pg-hold	32	{"db": "postgres", "mode": "sustained", "rate": 800, "concurrency": 32, "jobs": 56000, "work_per_s": 800, ` +
			`"hold_from_s": 22, "hold_to_s": 52, "intervals": [` +
			`{"end_s": 10, "worked": 9000, "latency_p50_ms": 50, "latency_p99_ms": 900}, ` +
			`{"end_s": 20, "worked": 8000, "latency_p50_ms": 5, "latency_p99_ms": 20}, ` +
			`{"end_s": 30, "worked": 1, "latency_p50_ms": 500, "latency_p99_ms": 5000}, ` +
			`{"end_s": 40, "worked": 7600, "latency_p50_ms": 6, "latency_p99_ms": 70}, ` +
			`{"end_s": 50, "worked": 7800, "latency_p50_ms": 6, "latency_p99_ms": 30}, ` +
			`{"end_s": 60, "worked": 1, "latency_p50_ms": 500, "latency_p99_ms": 5000}, ` +
			`{"end_s": 70, "worked": 8500, "latency_p50_ms": 7, "latency_p99_ms": 25}, ` +
			`{"end_s": 70.02, "worked": 10, "latency_p50_ms": 900, "latency_p99_ms": 900}]}`,
	}
	report := func(lines []string) string {
		dir := t.TempDir()
		results := dir + "/results.tsv"
		if err := os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"skipped.tsv", "samples.tsv"} {
			os.WriteFile(dir+"/"+f, nil, 0o644)
		}
		cmd := exec.Command("python3", "-B", "../compare_report.py")
		cmd.Env = append(os.Environ(), "RESULTS="+results, "SKIPPED="+dir+"/skipped.tsv", "SAMPLES="+dir+"/samples.tsv",
			"CHART_DATA="+dir+"/chart.json", "CHART_LINK=c.svg", "JOBS=1000", "RUNS=1", "SUSTAINED_CONCURRENCY=100",
			"LATENCY_RATE=500", "CEILING_DURATION=1s", "M_DATE=d", "M_COMMIT=c", "M_NPROC=2", "M_CPU=cpu", "M_MEM=1 GiB",
			"M_OS=os", "M_PG=15", "M_MYSQL=10.11", "M_FLUSH=1", "M_GO=go", "M_NODE=none")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		return string(out)
	}
	out := report(lines)
	for _, want := range []string{
		"## Measured SQL ceiling",
		"| PostgreSQL | PostgreSQL 15 | 50,000 | 1,000 × 4 | 45,000 | 1,000 | 0.90 | ≥ 0.8 | yes |",
		"| MariaDB | MariaDB 10.11 | 10,000 | 500 × 2 | 9,000 | 100 | 0.90 | ≥ 0.8 | yes |",
		"| PostgreSQL | 100 | 20,000* |  |",
		"| PostgreSQL work/s ÷ measured SQL ceiling (issue 39) | ≥ 0.8 | 0.90 | yes |",
		"sqlite-ceiling 0",
		"## Held-back vacuum",
		"| clean | 10 | 800 | 1.00 | 5.0 | 20.0 | n/a |",
		"| held | 20 | 770 | 0.96 | 6.0 | 70.0 | n/a |",
		"| recovery | 10 | 850 | 1.06 | 7.0 | 25.0 | n/a |",
		"| Held-back vacuum on PostgreSQL: work/s while held ÷ offered | ≥ 0.95 | 0.96 | yes |",
		"| Held-back vacuum on PostgreSQL: latency p99 while held ÷ clean | ≤ 3 | 3.50 | **no** |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if out := report(lines[:3]); !strings.Contains(out, "| Held-back vacuum on PostgreSQL (issue 39) | ≥ 0.95 of offered, p99 ≤ 3× clean | not run | n/a |") {
		t.Errorf("report without a hold run does not say it was not run:\n%s", out)
	}
	out = report(lines[3:])
	for _, want := range []string{
		"| PostgreSQL | PostgreSQL 15 | 50,000 | 1,000 × 4 | n/a | n/a | n/a | ≥ 0.8 | n/a |",
		"| MariaDB work/s ÷ measured SQL ceiling (issue 39) | ≥ 0.8 | n/a | n/a |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report without throughput lacks %q:\n%s", want, out)
		}
	}
}
