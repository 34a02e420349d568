package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/internal/testdb"
)

func setup(t *testing.T) (driver.Driver, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return testdb.Open(t, "postgres"), ctx
}

func job(queue, key, dedupe string) driver.InsertParams {
	if dedupe == "" {
		dedupe = driver.DedupePermanent
	}
	return driver.InsertParams{Queue: queue, Type: "t", Key: key, Dedupe: dedupe, Payload: []byte(`{"n":1}`), MaxAttempts: 3}
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
	if p.Limit == 0 {
		p.Limit = 100
	}
	jobs, err := d.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func ids(jobs []driver.JobRow) []int64 {
	var out []int64
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestOpenUnreachable(t *testing.T) {
	_, err := postgres.Open("postgres://postgres:secret@127.0.0.1:1/nowhere", postgres.Options{})
	if err == nil {
		t.Fatal("open of a closed port succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "refused") || strings.Contains(msg, "secret") {
		t.Fatalf("error should name the host and the problem, not the password: %v", err)
	}
	if _, err := postgres.Open("postgres://x@h/db", postgres.Options{Prefix: "Bad"}); err == nil {
		t.Fatal("bad prefix accepted")
	}
}

func TestSchema(t *testing.T) {
	d, ctx := setup(t)
	v, err := d.Migrate(ctx)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	cur, latest, err := d.SchemaVersion(ctx)
	if err != nil || cur != v || latest != v || v < 3 {
		t.Fatalf("schema version %d/%d, %v", cur, latest, err)
	}
	now, err := d.Now(ctx)
	if err != nil || time.Since(now).Abs() > time.Minute {
		t.Fatalf("now %v, %v", now, err)
	}

	fresh, err := postgres.Open(testdb.URL("postgres", ""), postgres.Options{Prefix: testdb.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if cur, _, err := fresh.SchemaVersion(ctx); err != nil || cur != 0 {
		t.Fatalf("unmigrated schema version %d, %v", cur, err)
	}
}

func TestInsert(t *testing.T) {
	d, ctx := setup(t)

	plain := insert(t, ctx, d, job("q", "", ""), job("q", "", ""), job("q", "", ""))
	for i, r := range plain {
		if r.Duplicate || (i > 0 && r.ID <= plain[i-1].ID) {
			t.Fatalf("keyless results %+v: want fresh ascending ids", plain)
		}
	}

	// Keys: within-batch duplicates point at the first occurrence.
	res := insert(t, ctx, d, job("q", "perm", driver.DedupePermanent), job("q", "", driver.DedupePermanent),
		job("q", "act", driver.DedupeActive), job("q", "perm", driver.DedupeActive), job("q", "act", driver.DedupeActive))
	want := []driver.InsertResult{{ID: res[0].ID}, {ID: res[1].ID}, {ID: res[2].ID}, {ID: res[0].ID, Duplicate: true}, {ID: res[2].ID, Duplicate: true}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("batch with repeated keys: got %+v, want %+v", res, want)
	}
	again := insert(t, ctx, d, job("q", "act", driver.DedupeActive), job("q", "perm", driver.DedupePermanent), job("q", "new", driver.DedupeActive))
	if !again[0].Duplicate || again[0].ID != res[2].ID || !again[1].Duplicate || again[1].ID != res[0].ID || again[2].Duplicate {
		t.Fatalf("second batch: %+v", again)
	}

	// Once its jobs finish, an active key is free again and a permanent one is not.
	jobs := claim(t, ctx, d, driver.ClaimParams{Queue: "q", Token: "w"})
	var cs []driver.Completion
	for _, j := range jobs {
		cs = append(cs, driver.Completion{ID: j.ID, Token: "w", Status: driver.StatusSuccess})
	}
	if lost, err := d.Complete(ctx, cs); err != nil || len(lost) != 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	third := insert(t, ctx, d, job("q", "act", driver.DedupeActive), job("q", "perm", driver.DedupePermanent))
	if third[0].Duplicate || third[0].ID == res[2].ID || !third[1].Duplicate || third[1].ID != res[0].ID {
		t.Fatalf("after completion: %+v", third)
	}

	j := get(t, ctx, d, third[0].ID)
	var payload map[string]int
	if err := json.Unmarshal(j.Payload, &payload); err != nil || payload["n"] != 1 {
		t.Fatalf("payload %q: %v", j.Payload, err)
	}
	if j.Status != driver.StatusPending || j.Key != "act" || j.Dedupe != driver.DedupeActive || j.MaxAttempts != 3 {
		t.Fatalf("stored job %+v", j)
	}

	// RunAt wins over Delay; Delay counts from the database clock.
	now, _ := d.Now(ctx)
	at := now.Add(time.Hour).Truncate(time.Microsecond)
	later := job("q", "", "")
	later.RunAt = at
	delayed := job("q", "", "")
	delayed.Delay = 10 * time.Minute
	r := insert(t, ctx, d, later, delayed)
	if got := get(t, ctx, d, r[0].ID).NextRunAt; !got.Equal(at) {
		t.Fatalf("run at %v, want %v", got, at)
	}
	if got := get(t, ctx, d, r[1].ID).NextRunAt.Sub(now); got < 10*time.Minute || got > 11*time.Minute {
		t.Fatalf("delay gave next_run_at now+%v", got)
	}

	// A caller's transaction decides.
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rolled, err := d.Insert(ctx, tx, []driver.InsertParams{job("q", "rolled", driver.DedupePermanent)})
	if err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if _, err := d.GetJob(ctx, rolled[0].ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("rolled back insert: %v", err)
	}

	// Bad rows fail the whole call.
	bad := job("q", "", "")
	bad.Type = strings.Repeat("x", driver.MaxTypeLen+1)
	if _, err := d.Insert(ctx, nil, []driver.InsertParams{job("q", "fine", driver.DedupePermanent), bad}); err == nil {
		t.Fatal("over-long type accepted")
	}
	if r := insert(t, ctx, d, job("q", "fine", driver.DedupePermanent)); r[0].Duplicate {
		t.Fatal("a failed batch left a row behind")
	}
}

func TestInsertLarge(t *testing.T) {
	d, ctx := setup(t)
	const n = 12001
	batch := make([]driver.InsertParams, n)
	for i := range batch {
		batch[i] = job("big", "", "")
		if i%1000 == 0 {
			// Keys repeat across chunks: the first occurrence must win.
			batch[i] = job("big", fmt.Sprintf("k%d", i%3000), driver.DedupePermanent)
		}
	}
	res := insert(t, ctx, d, batch...)
	seen := map[int64]bool{}
	var last int64
	for i, r := range res {
		if i%1000 == 0 && i >= 3000 {
			if !r.Duplicate || r.ID != res[i%3000].ID {
				t.Fatalf("row %d: %+v, want duplicate of %d", i, r, res[i%3000].ID)
			}
			continue
		}
		if r.Duplicate || seen[r.ID] || r.ID <= last {
			t.Fatalf("row %d: %+v after id %d", i, r, last)
		}
		seen[r.ID], last = true, r.ID
	}
	st, err := d.Stats(ctx)
	if err != nil || len(st) != 1 || st[0].Pending != int64(len(seen)) {
		t.Fatalf("stats %+v, %v; want %d pending", st, err, len(seen))
	}
}

func TestClaim(t *testing.T) {
	d, ctx := setup(t)
	now, _ := d.Now(ctx)
	mk := func(prio int, ago time.Duration, typ string) driver.InsertParams {
		j := job("c", "", "")
		j.Priority, j.RunAt, j.Type = prio, now.Add(-ago), typ
		return j
	}
	r := insert(t, ctx, d, mk(1, time.Hour, "t"), mk(0, time.Minute, "t"), mk(0, time.Hour, "t"), mk(0, time.Hour, "t"),
		mk(-1, -time.Hour, "t"), mk(0, time.Second, "other"))
	if got := ids(claim(t, ctx, d, driver.ClaimParams{Queue: "c", Type: "other"})); !reflect.DeepEqual(got, []int64{r[5].ID}) {
		t.Fatalf("claim by type: %v", got)
	}
	got := claim(t, ctx, d, driver.ClaimParams{Queue: "c", Limit: 3, Token: "w1"})
	if want := []int64{r[2].ID, r[3].ID, r[1].ID}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("claim order %v, want %v", ids(got), want)
	}
	for _, j := range got {
		if j.Status != driver.StatusProcessing || j.Attempts != 1 || j.LockedBy != "w1" || j.LockedUntil == nil ||
			j.LockedUntil.Sub(now) < 50*time.Second {
			t.Fatalf("claimed job %+v", j)
		}
	}
	// The future job stays, the rest is one job.
	if got := ids(claim(t, ctx, d, driver.ClaimParams{Queue: "c"})); !reflect.DeepEqual(got, []int64{r[0].ID}) {
		t.Fatalf("second claim %v", got)
	}
	if got := claim(t, ctx, d, driver.ClaimParams{Queue: "elsewhere"}); len(got) != 0 {
		t.Fatalf("empty queue gave %v", ids(got))
	}
}

func TestComplete(t *testing.T) {
	d, ctx := setup(t)
	r := insert(t, ctx, d, job("x", "", ""), job("x", "", ""), job("x", "", ""), job("x", "", ""), job("x", "", ""))
	claimed := claim(t, ctx, d, driver.ClaimParams{Queue: "x", Token: "w"})
	if len(claimed) != 5 {
		t.Fatalf("claimed %d", len(claimed))
	}
	long := strings.Repeat("e", driver.MaxErrorLen) + "tail"
	out, boom := "done", "boom"
	lost, err := d.Complete(ctx, []driver.Completion{
		{ID: r[0].ID, Token: "w", Status: driver.StatusSuccess, Result: &out},
		{ID: r[1].ID, Token: "w", Status: driver.StatusPending, Delay: time.Hour, Error: &long},
		{ID: r[2].ID, Token: "w", Status: driver.StatusFailed, Error: &boom},
		{ID: r[3].ID, Token: "w", Status: driver.StatusPending, Delay: 2 * time.Hour, Refund: true},
		{ID: r[4].ID, Token: "stale", Status: driver.StatusSuccess},
		{ID: 1 << 40, Token: "w", Status: driver.StatusSuccess},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lost, []int64{r[4].ID, 1 << 40}) {
		t.Fatalf("lost %v", lost)
	}
	now, _ := d.Now(ctx)

	ok := get(t, ctx, d, r[0].ID)
	if ok.Status != driver.StatusSuccess || ok.Result != "done" || ok.FinishedAt == nil || ok.LockedBy != "" || ok.LockedUntil != nil || ok.Attempts != 1 {
		t.Fatalf("success: %+v", ok)
	}
	retry := get(t, ctx, d, r[1].ID)
	if retry.Status != driver.StatusPending || retry.Attempts != 1 || retry.FinishedAt != nil || len(retry.LastError) != driver.MaxErrorLen ||
		!strings.HasSuffix(retry.LastError, "tail") || retry.NextRunAt.Sub(now) < 59*time.Minute {
		t.Fatalf("retry: %+v", retry)
	}
	failed := get(t, ctx, d, r[2].ID)
	if failed.Status != driver.StatusFailed || failed.LastError != "boom" || failed.FinishedAt == nil {
		t.Fatalf("fail: %+v", failed)
	}
	snoozed := get(t, ctx, d, r[3].ID)
	if snoozed.Status != driver.StatusPending || snoozed.Attempts != 0 || snoozed.NextRunAt.Sub(now) < 119*time.Minute {
		t.Fatalf("snooze: %+v", snoozed)
	}
	if stale := get(t, ctx, d, r[4].ID); stale.Status != driver.StatusProcessing || stale.LockedBy != "w" {
		t.Fatalf("stale token changed the job: %+v", stale)
	}
	// A second completion of a finished job is lost too.
	if lost, err := d.Complete(ctx, []driver.Completion{{ID: r[0].ID, Token: "w", Status: driver.StatusFailed}}); err != nil || len(lost) != 1 {
		t.Fatalf("repeat completion: lost %v, %v", lost, err)
	}

	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := d.CompleteTx(ctx, tx, driver.Completion{ID: r[4].ID, Token: "w", Status: driver.StatusPending, Delay: time.Second, Refund: true}); err != nil || !held {
		t.Fatalf("complete in tx: %v, %v", held, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if j := get(t, ctx, d, r[4].ID); j.Status != driver.StatusPending || j.Attempts != 0 {
		t.Fatalf("after CompleteTx: %+v", j)
	}
}

func TestHeartbeatRescue(t *testing.T) {
	d, ctx := setup(t)
	r := insert(t, ctx, d, job("h", "", ""), job("h", "", ""))
	claim(t, ctx, d, driver.ClaimParams{Queue: "h", Token: "w", Lease: time.Minute})
	lost, err := d.Heartbeat(ctx, driver.HeartbeatParams{Token: "w", IDs: []int64{r[0].ID, r[1].ID, 1 << 40}, Lease: time.Hour})
	if err != nil || !reflect.DeepEqual(lost, []int64{1 << 40}) {
		t.Fatalf("heartbeat lost %v, %v", lost, err)
	}
	now, _ := d.Now(ctx)
	if j := get(t, ctx, d, r[0].ID); j.LockedUntil.Sub(now) < 59*time.Minute {
		t.Fatalf("lease not extended: %v", j.LockedUntil)
	}
	if lost, err := d.Heartbeat(ctx, driver.HeartbeatParams{Token: "other", IDs: []int64{r[0].ID}, Lease: time.Hour}); err != nil || len(lost) != 1 {
		t.Fatalf("heartbeat with a foreign token: lost %v, %v", lost, err)
	}

	// Expired leases: one job has attempts left, the other not.
	one := job("r", "", "")
	one.MaxAttempts = 1
	e := insert(t, ctx, d, job("r", "", ""), one)
	claim(t, ctx, d, driver.ClaimParams{Queue: "r", Token: "dead", Lease: -time.Second})
	res, err := d.Rescue(ctx, driver.RescueParams{})
	if err != nil || res != (driver.RescueResult{Pending: 1, Failed: 1}) {
		t.Fatalf("rescue %+v, %v", res, err)
	}
	back, gone := get(t, ctx, d, e[0].ID), get(t, ctx, d, e[1].ID)
	if back.Status != driver.StatusPending || back.LockedBy != "" || !strings.Contains(back.LastError, "lease expired at") {
		t.Fatalf("rescued to pending: %+v", back)
	}
	if gone.Status != driver.StatusFailed || gone.FinishedAt == nil {
		t.Fatalf("rescued to failed: %+v", gone)
	}
	if lost, err := d.Complete(ctx, []driver.Completion{{ID: e[0].ID, Token: "dead", Status: driver.StatusSuccess}}); err != nil || len(lost) != 1 {
		t.Fatalf("completion after rescue: lost %v, %v", lost, err)
	}
	if res, err := d.Rescue(ctx, driver.RescueParams{}); err != nil || res != (driver.RescueResult{}) {
		t.Fatalf("second rescue %+v, %v", res, err)
	}
}

func TestPurgeRetryCancel(t *testing.T) {
	d, ctx := setup(t)
	r := insert(t, ctx, d, job("p", "", ""), job("p", "", ""), job("p", "kept", driver.DedupeActive), job("p", "", ""))
	claim(t, ctx, d, driver.ClaimParams{Queue: "p", Token: "w", Limit: 3})
	if _, err := d.Complete(ctx, []driver.Completion{
		{ID: r[0].ID, Token: "w", Status: driver.StatusSuccess},
		{ID: r[1].ID, Token: "w", Status: driver.StatusFailed},
		{ID: r[2].ID, Token: "w", Status: driver.StatusFailed},
	}); err != nil {
		t.Fatal(err)
	}

	if n, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusSuccess, OlderThan: time.Hour}); err != nil || n != 0 {
		t.Fatalf("purge of recent jobs: %d, %v", n, err)
	}
	if n, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusSuccess}); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if _, err := d.Purge(ctx, driver.PurgeParams{Status: driver.StatusPending}); err == nil {
		t.Fatal("purge of pending jobs allowed")
	}

	if err := d.Cancel(ctx, r[3].ID); err != nil {
		t.Fatal(err)
	}
	if err := d.Cancel(ctx, r[3].ID); !errors.Is(err, driver.ErrWrongState) {
		t.Fatalf("second cancel: %v", err)
	}
	if err := d.Cancel(ctx, r[0].ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("cancel of a purged job: %v", err)
	}

	// The key of the failed active job is taken by a new job, so a retry of
	// all failed jobs skips it.
	if res := insert(t, ctx, d, job("p", "kept", driver.DedupeActive)); res[0].Duplicate {
		t.Fatal("failed active job still holds its key")
	}
	if n, err := d.Retry(ctx, driver.RetryParams{AllFailed: true}); err != nil || n != 1 {
		t.Fatalf("retry all: %d, %v", n, err)
	}
	if j := get(t, ctx, d, r[1].ID); j.Status != driver.StatusPending || j.MaxAttempts != 3 || j.FinishedAt != nil {
		t.Fatalf("retried: %+v", j)
	}
	if _, err := d.Retry(ctx, driver.RetryParams{ID: r[2].ID}); err == nil {
		t.Fatal("retry of a job whose key is taken succeeded")
	}
	if n, err := d.Retry(ctx, driver.RetryParams{ID: r[3].ID}); err != nil || n != 1 {
		t.Fatalf("retry of a cancelled job: %d, %v", n, err)
	}
}

func TestStatsAndQueues(t *testing.T) {
	d, ctx := setup(t)
	insert(t, ctx, d, job("a", "", ""), job("a", "", ""), job("a", "", ""), job("b", "", ""))
	got := claim(t, ctx, d, driver.ClaimParams{Queue: "a", Token: "w", Limit: 2})
	if _, err := d.Complete(ctx, []driver.Completion{{ID: got[0].ID, Token: "w", Status: driver.StatusFailed}}); err != nil {
		t.Fatal(err)
	}
	st, err := d.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Queue != "a" || st[0].Pending != 1 || st[0].Processing != 1 || st[0].Failed != 1 ||
		st[0].OldestPending == nil || st[1].Queue != "b" || st[1].Pending != 1 {
		t.Fatalf("stats %+v", st)
	}

	if err := d.SetQueuePaused(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetQueuePaused(ctx, "b", true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetQueuePaused(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if p, err := d.PausedQueues(ctx); err != nil || !reflect.DeepEqual(p, map[string]bool{"a": true}) {
		t.Fatalf("paused %v, %v", p, err)
	}

	list, err := d.ListJobs(ctx, driver.ListParams{Queue: "a", Status: driver.StatusPending})
	if err != nil || len(list) != 1 {
		t.Fatalf("list %v, %v", list, err)
	}
}

func TestLeases(t *testing.T) {
	d, ctx := setup(t)
	a, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "leader", Holder: "A", TTL: time.Minute})
	if err != nil || !a.Held || a.Holder != "A" || a.Fence != 1 || !a.Until.After(a.Since) {
		t.Fatalf("first acquire %+v, %v", a, err)
	}
	b, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "leader", Holder: "B", TTL: time.Minute})
	if err != nil || b.Held || b.Holder != "A" || b.Fence != 1 {
		t.Fatalf("busy lease %+v, %v", b, err)
	}
	renew, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "leader", Holder: "A", TTL: time.Hour})
	if err != nil || !renew.Held || renew.Fence != 1 || !renew.Since.Equal(a.Since) || !renew.Until.After(a.Until) {
		t.Fatalf("renew %+v, %v", renew, err)
	}
	if ok, err := d.ReleaseLease(ctx, "leader", "B"); err != nil || ok {
		t.Fatalf("release by a non-holder: %v, %v", ok, err)
	}
	if ok, err := d.ReleaseLease(ctx, "leader", "A"); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	b, err = d.AcquireLease(ctx, driver.LeaseParams{Name: "leader", Holder: "B", TTL: time.Minute})
	if err != nil || !b.Held || b.Holder != "B" || b.Fence != 2 {
		t.Fatalf("acquire after release %+v, %v", b, err)
	}
	// An expired lease goes to the next comer with a higher fence.
	if _, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "short", Holder: "A", TTL: -time.Second}); err != nil {
		t.Fatal(err)
	}
	if c, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "short", Holder: "C", TTL: time.Minute}); err != nil || !c.Held || c.Fence != 2 {
		t.Fatalf("take-over of an expired lease %+v, %v", c, err)
	}
}

// TestConcurrent runs claimers and same-key enqueuers side by side: no job
// may be claimed twice, and every key must end up with exactly one holder.
func TestConcurrent(t *testing.T) {
	d, ctx := setup(t)
	const n, workers = 3000, 8
	batch := make([]driver.InsertParams, n)
	for i := range batch {
		batch[i] = job("cc", "", "")
	}
	insert(t, ctx, d, batch...)

	var mu sync.Mutex
	seen := map[int64]int{}
	holders := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("w%d", w)
			for {
				jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "cc", Limit: 50, Lease: time.Minute, Token: token})
				if err != nil {
					errs <- err
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
				if lost, err := d.Complete(ctx, cs); err != nil || len(lost) > 0 {
					errs <- fmt.Errorf("complete: lost %v, %v", lost, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			keys := make([]driver.InsertParams, 20)
			for i := range keys {
				keys[i] = job("keys", fmt.Sprintf("k%d", (i+w)%20), driver.DedupeActive)
			}
			for range 10 {
				res, err := d.Insert(ctx, nil, keys)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for i, r := range res {
					if holders[keys[i].Key] == nil {
						holders[keys[i].Key] = map[int64]bool{}
					}
					holders[keys[i].Key][r.ID] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %d claimed %d times", id, c)
		}
	}
	for k, ids := range holders {
		if len(ids) != 1 {
			t.Errorf("key %s has holders %v", k, ids)
		}
	}
}
