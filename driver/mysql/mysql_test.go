package mysql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/internal/testdb"
)

// modes runs a test once per claim path: SKIP LOCKED (what the test server
// supports) and the UPDATE ... LIMIT fallback.
func modes(t *testing.T, fn func(t *testing.T, d *mysql.Driver, ctx context.Context)) {
	for _, force := range []bool{false, true} {
		name := "skip_locked"
		if force {
			name = "update_claim"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			fn(t, open(t, force), ctx)
		})
	}
}

// open returns a migrated driver on fresh tables.
func open(t *testing.T, forceUpdate bool) *mysql.Driver {
	t.Helper()
	if !forceUpdate {
		d := testdb.Open(t, "mysql").(*mysql.Driver)
		if !d.SkipLocked() {
			t.Fatalf("server %s should support SKIP LOCKED", d.ServerVersion())
		}
		return d
	}
	url, prefix := testdb.URL("mysql", t.TempDir()), testdb.Prefix()
	d, err := mysql.Open(url, mysql.Options{Prefix: prefix, ForceUpdateClaim: true})
	if err == nil {
		if _, err = d.Migrate(context.Background()); err != nil {
			d.Close()
		}
	}
	if err != nil {
		if testdb.RequireAll() {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING MYSQL TESTS: %v\n", err)
		t.Skip(err)
	}
	if d.SkipLocked() {
		t.Fatal("ForceUpdateClaim should select the UPDATE claim")
	}
	t.Cleanup(func() {
		testdb.Drop(d, prefix)
		d.Close()
	})
	return d
}

func job(queue, key, dedupe string) driver.InsertParams {
	if dedupe == "" {
		dedupe = driver.DedupePermanent
	}
	return driver.InsertParams{Queue: queue, Type: "t", Key: key, Dedupe: dedupe, Payload: []byte(`{"n": 1}`), MaxAttempts: 3}
}

func insert(t *testing.T, ctx context.Context, d driver.Driver, jobs ...driver.InsertParams) []driver.InsertResult {
	t.Helper()
	res, err := d.Insert(ctx, nil, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("got %d results for %d jobs", len(res), len(jobs))
	}
	return res
}

func get(t *testing.T, ctx context.Context, d driver.Driver, id int64) *driver.JobRow {
	t.Helper()
	j, err := d.GetJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func claim(t *testing.T, ctx context.Context, d driver.Driver, p driver.ClaimParams) []driver.JobRow {
	t.Helper()
	if p.Token == "" {
		p.Token = "tok-" + p.Queue
	}
	if p.Lease == 0 {
		p.Lease = time.Minute
	}
	jobs, err := d.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func complete(t *testing.T, ctx context.Context, d driver.Driver, cs ...driver.Completion) []int64 {
	t.Helper()
	lost, err := d.Complete(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	return lost
}

func ptr(s string) *string { return &s }

// jsonEqual compares payloads as JSON: MySQL's JSON type, like PostgreSQL's
// jsonb, gives back its own spacing and key order.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestParseURL(t *testing.T) {
	cfg, err := mysql.ParseURL("mysql://app:p%40ss%3Aw@db.example:3307/jobs?charset=utf8mb4&innodb_lock_wait_timeout=5&sluice_claim=update")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "app" || cfg.Passwd != "p@ss:w" || cfg.Net != "tcp" || cfg.Addr != "db.example:3307" || cfg.DBName != "jobs" {
		t.Errorf("connection fields: %+v", cfg)
	}
	if !cfg.ParseTime || cfg.Loc != time.UTC || !cfg.InterpolateParams || !cfg.ClientFoundRows {
		t.Errorf("session flags: %+v", cfg)
	}
	if cfg.Params["time_zone"] != "'+00:00'" || cfg.Params["innodb_lock_wait_timeout"] != "5" {
		t.Errorf("params: %v", cfg.Params)
	}
	if _, ok := cfg.Params["sluice_claim"]; ok {
		t.Error("sluice_claim reached the server parameters")
	}

	cfg, err = mysql.ParseURL("mysql://root@localhost/db")
	if err != nil || cfg.Addr != "localhost:3306" {
		t.Errorf("default port: %v %v", cfg, err)
	}
	for _, bad := range []string{
		"mysql://root@localhost:3306",
		"mysql://root@localhost:3306/",
		"mysql://root@localhost/db?sluice_claim=fast",
		"postgres://root@localhost/db",
	} {
		if _, err := mysql.ParseURL(bad); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
	_, err = mysql.ParseURL("mysql://root:secret@localhost:3306")
	if err == nil || !strings.Contains(err.Error(), "database") || strings.Contains(err.Error(), "secret") {
		t.Errorf("missing database: %v", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	_, err := mysql.Open("mysql://root@127.0.0.1:1/sluice_test?timeout=2s", mysql.Options{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("want an error naming the address, got %v", err)
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	v, err := d.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, latest, err := d.SchemaVersion(ctx)
	if err != nil || cur != v || latest != v || v < 1 {
		t.Fatalf("version %d, schema %d/%d, %v", v, cur, latest, err)
	}
}

// TestMigrateConcurrent has several processes migrate fresh tables at once;
// the named lock lets one create them and the others find them done.
func TestMigrateConcurrent(t *testing.T) {
	ctx := context.Background()
	url, prefix := testdb.URL("mysql", t.TempDir()), testdb.Prefix()
	var ds []*mysql.Driver
	for range 4 {
		d, err := mysql.Open(url, mysql.Options{Prefix: prefix})
		if err != nil {
			t.Skip(err)
		}
		ds = append(ds, d)
	}
	t.Cleanup(func() {
		testdb.Drop(ds[0], prefix)
		for _, d := range ds {
			d.Close()
		}
	})
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			if v, err := d.Migrate(ctx); err != nil || v < 1 {
				t.Errorf("migrate: version %d, %v", v, err)
			}
		})
	}
	wg.Wait()
}

func TestSchemaVersionMissing(t *testing.T) {
	d, err := mysql.Open(testdb.URL("mysql", t.TempDir()), mysql.Options{Prefix: testdb.Prefix()})
	if err != nil {
		t.Skip(err)
	}
	defer d.Close()
	cur, latest, err := d.SchemaVersion(context.Background())
	if err != nil || cur != 0 || latest < 1 {
		t.Fatalf("schema %d/%d, %v", cur, latest, err)
	}
}

func TestInsertDedupe(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		// Permanent: the key stays taken after the job finishes.
		r := insert(t, ctx, d, job("q", "perm", ""))
		if r[0].Duplicate || r[0].ID == 0 {
			t.Fatalf("first insert: %+v", r[0])
		}
		if r2 := insert(t, ctx, d, job("q", "perm", "")); r2[0] != (driver.InsertResult{ID: r[0].ID, Duplicate: true}) {
			t.Fatalf("second insert: %+v", r2[0])
		}
		c := claim(t, ctx, d, driver.ClaimParams{Queue: "q", Limit: 1})
		complete(t, ctx, d, driver.Completion{ID: c[0].ID, Token: c[0].LockedBy, Status: driver.StatusSuccess})
		if r3 := insert(t, ctx, d, job("q", "perm", "")); r3[0] != (driver.InsertResult{ID: r[0].ID, Duplicate: true}) {
			t.Fatalf("after success: %+v", r3[0])
		}

		// Active: the key frees up when the job finishes.
		a := insert(t, ctx, d, job("qa", "act", driver.DedupeActive))
		if a2 := insert(t, ctx, d, job("qa", "act", driver.DedupeActive)); a2[0] != (driver.InsertResult{ID: a[0].ID, Duplicate: true}) {
			t.Fatalf("active while pending: %+v", a2[0])
		}
		c = claim(t, ctx, d, driver.ClaimParams{Queue: "qa", Limit: 1})
		if a3 := insert(t, ctx, d, job("qa", "act", driver.DedupeActive)); a3[0] != (driver.InsertResult{ID: a[0].ID, Duplicate: true}) {
			t.Fatalf("active while processing: %+v", a3[0])
		}
		complete(t, ctx, d, driver.Completion{ID: c[0].ID, Token: c[0].LockedBy, Status: driver.StatusFailed})
		if a4 := insert(t, ctx, d, job("qa", "act", driver.DedupeActive)); a4[0].Duplicate || a4[0].ID == a[0].ID {
			t.Fatalf("active after failure: %+v", a4[0])
		}
		// Retrying the failed one would make two live holders of the key.
		if _, err := d.Retry(ctx, driver.RetryParams{ID: a[0].ID}); err == nil {
			t.Fatal("retry of a job whose key is taken should fail")
		}

		for _, consecutive := range []bool{true, false} {
			mysql.SetConsecutiveIDs(d, consecutive)
			k := fmt.Sprintf("-%v", consecutive)
			held := insert(t, ctx, d, job("b", "held"+k, ""))[0].ID
			res := insert(t, ctx, d,
				job("b", "x"+k, ""), job("b", "x"+k, ""), job("b", "", ""), job("b", "held"+k, ""),
				job("b", "y"+k, driver.DedupeActive), job("b", "x"+k+" ", ""), job("b", "x"+k, ""), job("b", "", ""))
			want := []driver.InsertResult{
				{ID: res[0].ID}, {ID: res[0].ID, Duplicate: true}, {ID: res[2].ID}, {ID: held, Duplicate: true},
				{ID: res[4].ID}, {ID: res[5].ID}, {ID: res[0].ID, Duplicate: true}, {ID: res[7].ID},
			}
			for i := range want {
				if res[i] != want[i] {
					t.Fatalf("consecutive=%v: results %+v, want %+v", consecutive, res, want)
				}
			}
			// Each new row's id must lead to that row, keys compared exactly.
			seen := map[int64]bool{}
			for i, key := range map[int]string{0: "x" + k, 2: "", 4: "y" + k, 5: "x" + k + " ", 7: ""} {
				if seen[res[i].ID] {
					t.Fatalf("consecutive=%v: id %d given twice: %+v", consecutive, res[i].ID, res)
				}
				seen[res[i].ID] = true
				if j := get(t, ctx, d, res[i].ID); j.Key != key {
					t.Fatalf("consecutive=%v: job %d has key %q, want %q", consecutive, j.ID, j.Key, key)
				}
			}
		}
		mysql.SetConsecutiveIDs(d, true)

		// A rolled-back caller transaction leaves nothing behind.
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := d.Insert(ctx, tx, []driver.InsertParams{job("tx", "in-tx", "")})
		if err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if _, err := d.GetJob(ctx, rr[0].ID); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("rolled-back job: %v", err)
		}

		// Fields round-trip; a bad payload or an over-long queue fails.
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		p := driver.InsertParams{Queue: "f", Type: "typ", Key: "ключ", Dedupe: driver.DedupeActive,
			Payload: []byte(`{"a":[1,2]}`), Priority: -3, MaxAttempts: 7, RunAt: runAt}
		j := get(t, ctx, d, insert(t, ctx, d, p)[0].ID)
		if j.Queue != "f" || j.Type != "typ" || j.Key != "ключ" || j.Dedupe != driver.DedupeActive || !jsonEqual(j.Payload, p.Payload) ||
			j.Priority != -3 || j.MaxAttempts != 7 || !j.NextRunAt.Equal(runAt) || j.Status != driver.StatusPending {
			t.Fatalf("round trip: %+v", j)
		}
		if _, err := d.Insert(ctx, nil, []driver.InsertParams{{Queue: "f", Type: "t", Dedupe: driver.DedupePermanent, Payload: []byte(`{`)}}); err == nil {
			t.Fatal("invalid JSON payload accepted")
		}
		if _, err := d.Insert(ctx, nil, []driver.InsertParams{job(strings.Repeat("q", 65), "", "")}); err == nil {
			t.Fatal("over-long queue accepted")
		}
	})
}

// TestInsertConcurrentKeys makes enqueues race on the same keys, which takes
// the row-by-row path after a duplicate key error.
func TestInsertConcurrentKeys(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	const workers, keys = 8, 1500
	results := make([][]driver.InsertResult, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			batch := make([]driver.InsertParams, keys)
			for i := range batch {
				batch[i] = job("race", fmt.Sprintf("k%d", (i+w*25)%keys), "")
			}
			<-start
			res, err := d.Insert(ctx, nil, batch)
			if err != nil {
				errs <- err
				return
			}
			results[w] = res
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	owner := map[string]int64{}
	inserted := 0
	for w, res := range results {
		for i, r := range res {
			k := fmt.Sprintf("k%d", (i+w*25)%keys)
			if id, ok := owner[k]; ok && id != r.ID {
				t.Fatalf("key %s: ids %d and %d", k, id, r.ID)
			}
			owner[k] = r.ID
			if !r.Duplicate {
				inserted++
			}
		}
	}
	if inserted != keys {
		t.Fatalf("%d rows reported inserted for %d keys", inserted, keys)
	}
}

func TestClaimOrder(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		now, err := d.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mk := func(prio int, runAt time.Time, typ string) driver.InsertParams {
			j := job("o", "", "")
			j.Priority, j.RunAt, j.Type = prio, runAt, typ
			return j
		}
		ids := insert(t, ctx, d,
			mk(5, now.Add(-time.Minute), "t"),   // 0
			mk(0, now.Add(-time.Second), "t"),   // 1
			mk(0, now.Add(-time.Minute), "t"),   // 2
			mk(-1, now.Add(time.Hour), "t"),     // 3: not yet runnable
			mk(0, now.Add(-time.Minute), "u"),   // 4
			mk(9, now.Add(-time.Hour), "other"), // 5
		)
		got := claim(t, ctx, d, driver.ClaimParams{Queue: "o", Type: "t", Limit: 2, Token: "a", Lease: 30 * time.Second})
		if len(got) != 2 || got[0].ID != ids[2].ID || got[1].ID != ids[1].ID {
			t.Fatalf("claimed %v, want jobs 2 and 1", got)
		}
		for _, j := range got {
			stored := get(t, ctx, d, j.ID)
			if j.Status != driver.StatusProcessing || j.Attempts != 1 || j.LockedBy != "a" || j.LockedUntil == nil {
				t.Fatalf("claimed row: %+v", j)
			}
			if !stored.LockedUntil.Equal(*j.LockedUntil) || !stored.UpdatedAt.Equal(j.UpdatedAt) || stored.Attempts != 1 || stored.Status != j.Status {
				t.Fatalf("returned row %+v differs from stored %+v", j, stored)
			}
			if d := j.LockedUntil.Sub(now); d < 29*time.Second || d > 40*time.Second {
				t.Fatalf("lease ends %v after now", d)
			}
		}
		got = claim(t, ctx, d, driver.ClaimParams{Queue: "o", Limit: 10, Token: "b"})
		if len(got) != 3 || got[0].ID != ids[4].ID || got[1].ID != ids[0].ID || got[2].ID != ids[5].ID {
			t.Fatalf("claimed %v, want jobs 4, 0 and 5", got)
		}
		if got := claim(t, ctx, d, driver.ClaimParams{Queue: "o", Limit: 10}); len(got) != 0 {
			t.Fatalf("claimed a job not yet due: %+v", got)
		}
	})
}

func TestComplete(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		var batch []driver.InsertParams
		for range 6 {
			batch = append(batch, job("c", "", ""))
		}
		insert(t, ctx, d, batch...)
		c := claim(t, ctx, d, driver.ClaimParams{Queue: "c", Limit: 6, Token: "tok"})
		if len(c) != 6 {
			t.Fatalf("claimed %d", len(c))
		}
		before, _ := d.Now(ctx)
		outcomes := []driver.Completion{
			{ID: c[0].ID, Token: "tok", Status: driver.StatusSuccess, Result: ptr("done")},
			{ID: c[1].ID, Token: "tok", Status: driver.StatusPending, Delay: time.Hour, Error: ptr("boom")},
			{ID: c[2].ID, Token: "tok", Status: driver.StatusFailed, Error: ptr(strings.Repeat("é", driver.MaxErrorLen))},
			{ID: c[3].ID, Token: "tok", Status: driver.StatusPending, Delay: time.Minute, Refund: true},
		}
		if lost := complete(t, ctx, d, outcomes...); len(lost) != 0 {
			t.Fatalf("lost %v", lost)
		}
		j := get(t, ctx, d, c[0].ID)
		if j.Status != driver.StatusSuccess || j.Result != "done" || j.FinishedAt == nil || j.LockedBy != "" || j.LockedUntil != nil {
			t.Fatalf("success: %+v", j)
		}
		j = get(t, ctx, d, c[1].ID)
		if j.Status != driver.StatusPending || j.LastError != "boom" || j.Attempts != 1 || j.FinishedAt != nil ||
			j.NextRunAt.Sub(before) < 59*time.Minute {
			t.Fatalf("retry: %+v", j)
		}
		j = get(t, ctx, d, c[2].ID)
		if j.Status != driver.StatusFailed || len(j.LastError) > driver.MaxErrorLen || j.FinishedAt == nil {
			t.Fatalf("fail: status %s, error %d bytes", j.Status, len(j.LastError))
		}
		j = get(t, ctx, d, c[3].ID)
		if j.Status != driver.StatusPending || j.Attempts != 0 || j.LastError != "" || j.NextRunAt.Sub(before) < 59*time.Second {
			t.Fatalf("snooze: %+v", j)
		}

		// A stale token and a repeated completion are lost; the rest of the
		// batch still lands.
		lost := complete(t, ctx, d,
			driver.Completion{ID: c[4].ID, Token: "stale", Status: driver.StatusSuccess},
			driver.Completion{ID: c[5].ID, Token: "tok", Status: driver.StatusSuccess},
			driver.Completion{ID: c[0].ID, Token: "tok", Status: driver.StatusFailed})
		if len(lost) != 2 || lost[0] != c[4].ID || lost[1] != c[0].ID {
			t.Fatalf("lost %v, want [%d %d]", lost, c[4].ID, c[0].ID)
		}
		if j := get(t, ctx, d, c[4].ID); j.Status != driver.StatusProcessing || j.LockedBy != "tok" {
			t.Fatalf("stale completion changed the job: %+v", j)
		}
		if j := get(t, ctx, d, c[5].ID); j.Status != driver.StatusSuccess {
			t.Fatalf("job 5: %+v", j)
		}
		if lost := complete(t, ctx, d, driver.Completion{ID: c[4].ID, Token: "nope", Status: driver.StatusSuccess}); len(lost) != 1 {
			t.Fatalf("single stale completion: lost %v", lost)
		}

		// Completion inside the caller's transaction.
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := d.CompleteTx(ctx, tx, driver.Completion{ID: c[4].ID, Token: "tok", Status: driver.StatusSuccess})
		if err != nil || !ok {
			t.Fatalf("CompleteTx: %v %v", ok, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if j := get(t, ctx, d, c[4].ID); j.Status != driver.StatusSuccess {
			t.Fatalf("CompleteTx: %+v", j)
		}
	})
}

func TestCompleteLargeBatch(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	batch := make([]driver.InsertParams, 1200)
	for i := range batch {
		batch[i] = job("big", "", "")
	}
	insert(t, ctx, d, batch...)
	c := claim(t, ctx, d, driver.ClaimParams{Queue: "big", Limit: 2000, Token: "t"})
	if len(c) != len(batch) {
		t.Fatalf("claimed %d", len(c))
	}
	cs := make([]driver.Completion, len(c))
	for i, j := range c {
		cs[i] = driver.Completion{ID: j.ID, Token: "t", Status: driver.StatusSuccess, Result: ptr(strings.Repeat("r", 4000))}
	}
	cs[700].Token = "other"
	lost := complete(t, ctx, d, cs...)
	if len(lost) != 1 || lost[0] != c[700].ID {
		t.Fatalf("lost %v", lost)
	}
	st, err := d.Stats(ctx)
	if err != nil || len(st) != 1 || st[0].Processing != 1 {
		t.Fatalf("stats %+v %v", st, err)
	}
}

func TestHeartbeat(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		insert(t, ctx, d, job("h", "", ""), job("h", "", ""))
		c := claim(t, ctx, d, driver.ClaimParams{Queue: "h", Limit: 2, Token: "hb", Lease: time.Second})
		lost, err := d.Heartbeat(ctx, driver.HeartbeatParams{Token: "hb", IDs: []int64{c[0].ID, c[1].ID}, Lease: time.Hour})
		if err != nil || len(lost) != 0 {
			t.Fatalf("heartbeat: lost %v, %v", lost, err)
		}
		if j := get(t, ctx, d, c[0].ID); j.LockedUntil.Sub(*c[0].LockedUntil) < 50*time.Minute {
			t.Fatalf("lease not extended: %v -> %v", c[0].LockedUntil, j.LockedUntil)
		}
		complete(t, ctx, d, driver.Completion{ID: c[1].ID, Token: "hb", Status: driver.StatusSuccess})
		lost, err = d.Heartbeat(ctx, driver.HeartbeatParams{Token: "hb", IDs: []int64{c[0].ID, c[1].ID}, Lease: time.Hour})
		if err != nil || len(lost) != 1 || lost[0] != c[1].ID {
			t.Fatalf("heartbeat after completion: lost %v, %v", lost, err)
		}
		lost, err = d.Heartbeat(ctx, driver.HeartbeatParams{Token: "other", IDs: []int64{c[0].ID}, Lease: time.Hour})
		if err != nil || len(lost) != 1 {
			t.Fatalf("heartbeat with a wrong token: lost %v, %v", lost, err)
		}
	})
}

func TestRescue(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		again := job("r", "", "")
		spent := job("r", "", "")
		spent.MaxAttempts = 1
		live := job("r", "", "")
		ids := insert(t, ctx, d, again, spent)
		if c := claim(t, ctx, d, driver.ClaimParams{Queue: "r", Limit: 2, Token: "gone", Lease: -time.Second}); len(c) != 2 {
			t.Fatalf("claimed %d", len(c))
		}
		liveID := insert(t, ctx, d, live)[0].ID
		claim(t, ctx, d, driver.ClaimParams{Queue: "r", Limit: 1, Token: "alive"})
		r, err := d.Rescue(ctx, driver.RescueParams{Limit: 10})
		if err != nil || r != (driver.RescueResult{Pending: 1, Failed: 1}) {
			t.Fatalf("rescue: %+v %v", r, err)
		}
		j := get(t, ctx, d, ids[0].ID)
		if j.Status != driver.StatusPending || j.LockedBy != "" || !strings.HasPrefix(j.LastError, "lease expired at ") {
			t.Fatalf("rescued to pending: %+v", j)
		}
		j = get(t, ctx, d, ids[1].ID)
		if j.Status != driver.StatusFailed || j.FinishedAt == nil {
			t.Fatalf("rescued to failed: %+v", j)
		}
		if j := get(t, ctx, d, liveID); j.Status != driver.StatusProcessing {
			t.Fatalf("live lease rescued: %+v", j)
		}
		if r, err := d.Rescue(ctx, driver.RescueParams{}); err != nil || r != (driver.RescueResult{}) {
			t.Fatalf("second rescue: %+v %v", r, err)
		}
	})
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	var batch []driver.InsertParams
	for range 5 {
		batch = append(batch, job("p", "", ""))
	}
	insert(t, ctx, d, batch...)
	c := claim(t, ctx, d, driver.ClaimParams{Queue: "p", Limit: 5, Token: "p"})
	var cs []driver.Completion
	for _, j := range c[:4] {
		cs = append(cs, driver.Completion{ID: j.ID, Token: "p", Status: driver.StatusSuccess})
	}
	complete(t, ctx, d, cs...)
	if n, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusSuccess, OlderThan: time.Hour, Limit: 10}); err != nil || n != 0 {
		t.Fatalf("purge of recent jobs: %d %v", n, err)
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusSuccess, Limit: 3}); err != nil || n != 3 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if n, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusSuccess, Limit: 3}); err != nil || n != 1 {
		t.Fatalf("second purge: %d %v", n, err)
	}
	if _, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusPending}); err == nil {
		t.Fatal("purge of pending jobs accepted")
	}
	if j := get(t, ctx, d, c[4].ID); j.Status != driver.StatusProcessing {
		t.Fatalf("purge touched a live job: %+v", j)
	}
}

func TestLeases(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	acquire := func(holder string, ttl time.Duration) driver.Lease {
		t.Helper()
		l, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "leader", Holder: holder, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := acquire("a", time.Minute)
	if !a.Held || a.Holder != "a" || a.Fence != 1 || !a.Until.After(a.Since) {
		t.Fatalf("first acquire: %+v", a)
	}
	if b := acquire("b", time.Minute); b.Held || b.Holder != "a" || b.Fence != 1 {
		t.Fatalf("busy lease: %+v", b)
	}
	a2 := acquire("a", 2*time.Minute)
	if !a2.Held || a2.Fence != 1 || !a2.Since.Equal(a.Since) || !a2.Until.After(a.Until) {
		t.Fatalf("renewal: %+v after %+v", a2, a)
	}
	if ok, err := d.ReleaseLease(ctx, "leader", "b"); err != nil || ok {
		t.Fatalf("release by non-holder: %v %v", ok, err)
	}
	if ok, err := d.ReleaseLease(ctx, "leader", "a"); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if b := acquire("b", -time.Second); !b.Held || b.Fence != 2 {
		t.Fatalf("acquire after release: %+v", b)
	}
	if c := acquire("c", time.Minute); !c.Held || c.Fence != 3 || c.Holder != "c" {
		t.Fatalf("takeover of an expired lease: %+v", c)
	}

	// Concurrent first acquisitions of a new name: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for i := range 8 {
		wg.Go(func() {
			l, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "race", Holder: fmt.Sprint(i), TTL: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			if l.Held {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if winners != 1 {
		t.Fatalf("%d holders of one lease", winners)
	}
}

func TestAdmin(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	ids := insert(t, ctx, d, job("adm", "", ""), job("adm", "", ""), job("adm2", "", ""))
	c := claim(t, ctx, d, driver.ClaimParams{Queue: "adm", Limit: 1, Token: "x"})
	complete(t, ctx, d, driver.Completion{ID: c[0].ID, Token: "x", Status: driver.StatusFailed, Error: ptr("bad")})

	st, err := d.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Queue != "adm" || st[0].Pending != 1 || st[0].Failed != 1 || st[0].OldestPending == nil ||
		st[1].Queue != "adm2" || st[1].Pending != 1 {
		t.Fatalf("stats: %+v", st)
	}

	if n, err := d.Retry(ctx, driver.RetryParams{ID: c[0].ID}); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if j := get(t, ctx, d, c[0].ID); j.Status != driver.StatusPending || j.MaxAttempts < 2 || j.FinishedAt != nil {
		t.Fatalf("retried: %+v", j)
	}
	if _, err := d.Retry(ctx, driver.RetryParams{ID: c[0].ID}); !errors.Is(err, driver.ErrWrongState) {
		t.Fatalf("retry of a pending job: %v", err)
	}
	if err := d.Cancel(ctx, ids[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := d.Cancel(ctx, ids[1].ID); !errors.Is(err, driver.ErrWrongState) {
		t.Fatalf("second cancel: %v", err)
	}
	if err := d.Cancel(ctx, 1<<40); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("cancel of a missing job: %v", err)
	}
	if n, err := d.Retry(ctx, driver.RetryParams{AllFailed: true}); err != nil || n != 0 {
		t.Fatalf("retry all failed: %d %v", n, err)
	}

	if err := d.SetQueuePaused(ctx, "adm", true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetQueuePaused(ctx, "adm2", true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetQueuePaused(ctx, "adm2", false); err != nil {
		t.Fatal(err)
	}
	if p, err := d.PausedQueues(ctx); err != nil || len(p) != 1 || !p["adm"] {
		t.Fatalf("paused: %v %v", p, err)
	}

	list, err := d.ListJobs(ctx, driver.ListParams{Queue: "adm", Limit: 10})
	if err != nil || len(list) != 2 || list[0].ID != ids[1].ID {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// TestConcurrentClaims has 8 claimers drain one queue: no job may be
// claimed twice and no deadlock may surface.
func TestConcurrentClaims(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		const total = 3000
		batch := make([]driver.InsertParams, total)
		for i := range batch {
			batch[i] = job("cc", "", "")
			batch[i].Priority = i % 3
		}
		insert(t, ctx, d, batch...)
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				token := fmt.Sprintf("w%d", w)
				for {
					jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "cc", Limit: 50, Lease: time.Minute, Token: token})
					if err != nil {
						t.Error(err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					cs := make([]driver.Completion, len(jobs))
					mu.Lock()
					for i, j := range jobs {
						seen[j.ID]++
						cs[i] = driver.Completion{ID: j.ID, Token: token, Status: driver.StatusSuccess}
					}
					mu.Unlock()
					// New work arriving while others claim exercises the
					// claim's interaction with inserts.
					if _, err := d.Insert(ctx, nil, []driver.InsertParams{job("other", "", "")}); err != nil {
						t.Error(err)
						return
					}
					lost, err := d.Complete(ctx, cs)
					if err != nil || len(lost) != 0 {
						t.Errorf("complete: lost %v, %v", lost, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != total {
			t.Fatalf("claimed %d distinct jobs of %d", len(seen), total)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("job %d claimed %d times", id, n)
			}
		}
	})
}
