package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

func setup(t *testing.T) (driver.Driver, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return testdb.Open(t, "postgres"), ctx
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
	m, err := d.Migrate(ctx)
	v := m.To
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

	plain := testdb.Insert(t, ctx, d, testdb.Job("q", "", ""), testdb.Job("q", "", ""), testdb.Job("q", "", ""))
	for i, r := range plain {
		if r.Duplicate || (i > 0 && r.ID <= plain[i-1].ID) {
			t.Fatalf("keyless results %+v: want fresh ascending ids", plain)
		}
	}

	// Keys: within-batch duplicates point at the first occurrence.
	res := testdb.Insert(t, ctx, d, testdb.Job("q", "perm", sluicetype.DedupePermanent), testdb.Job("q", "", sluicetype.DedupePermanent),
		testdb.Job("q", "act", sluicetype.DedupeActive), testdb.Job("q", "perm", sluicetype.DedupeActive), testdb.Job("q", "act", sluicetype.DedupeActive))
	want := []driver.InsertResult{{ID: res[0].ID}, {ID: res[1].ID}, {ID: res[2].ID}, {ID: res[0].ID, Duplicate: true}, {ID: res[2].ID, Duplicate: true}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("batch with repeated keys: got %+v, want %+v", res, want)
	}
	again := testdb.Insert(t, ctx, d, testdb.Job("q", "act", sluicetype.DedupeActive), testdb.Job("q", "perm", sluicetype.DedupePermanent), testdb.Job("q", "new", sluicetype.DedupeActive))
	if !again[0].Duplicate || again[0].ID != res[2].ID || !again[1].Duplicate || again[1].ID != res[0].ID || again[2].Duplicate {
		t.Fatalf("second batch: %+v", again)
	}

	// Once its jobs finish, an active key is free again and a permanent one is not.
	jobs := testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "q", Token: "w"})
	var cs []driver.Completion
	for _, j := range jobs {
		cs = append(cs, driver.Completion{ID: j.ID, Token: "w", Status: sluicetype.StatusSuccess})
	}
	if lost, err := d.Complete(ctx, driver.CompleteParams{Completions: cs}); err != nil || len(lost) != 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	third := testdb.Insert(t, ctx, d, testdb.Job("q", "act", sluicetype.DedupeActive), testdb.Job("q", "perm", sluicetype.DedupePermanent))
	if third[0].Duplicate || third[0].ID == res[2].ID || !third[1].Duplicate || third[1].ID != res[0].ID {
		t.Fatalf("after completion: %+v", third)
	}

	j := testdb.Get(t, ctx, d, third[0].ID)
	var payload map[string]int
	if err := json.Unmarshal(j.Payload, &payload); err != nil || payload["n"] != 1 {
		t.Fatalf("payload %q: %v", j.Payload, err)
	}
	if j.Status != sluicetype.StatusPending || j.Key != "act" || j.Dedupe != sluicetype.DedupeActive || j.MaxAttempts != 3 {
		t.Fatalf("stored job %+v", j)
	}

	// RunAt wins over Delay; Delay counts from the database clock.
	now, _ := d.Now(ctx)
	at := now.Add(time.Hour).Truncate(time.Microsecond)
	later := testdb.Job("q", "", "")
	later.RunAt = at
	delayed := testdb.Job("q", "", "")
	delayed.Delay = 10 * time.Minute
	r := testdb.Insert(t, ctx, d, later, delayed)
	if got := testdb.Get(t, ctx, d, r[0].ID).NextRunAt; !got.Equal(at) {
		t.Fatalf("run at %v, want %v", got, at)
	}
	if got := testdb.Get(t, ctx, d, r[1].ID).NextRunAt.Sub(now); got < 10*time.Minute || got > 11*time.Minute {
		t.Fatalf("delay gave next_run_at now+%v", got)
	}

	// A caller's transaction decides.
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rolled, err := d.Insert(ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{testdb.Job("q", "rolled", sluicetype.DedupePermanent)}})
	if err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if _, err := d.GetJob(ctx, rolled[0].ID); !errors.Is(err, sluicetype.ErrNotFound) {
		t.Fatalf("rolled back insert: %v", err)
	}

	// Bad rows fail the whole call.
	bad := testdb.Job("q", "", "")
	bad.Type = strings.Repeat("x", sluicetype.MaxTypeLen+1)
	if _, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{testdb.Job("q", "fine", sluicetype.DedupePermanent), bad}}); err == nil {
		t.Fatal("over-long type accepted")
	}
	if r := testdb.Insert(t, ctx, d, testdb.Job("q", "fine", sluicetype.DedupePermanent)); r[0].Duplicate {
		t.Fatal("a failed batch left a row behind")
	}
}

func TestInsertLarge(t *testing.T) {
	d, ctx := setup(t)
	const n = 12001
	batch := make([]driver.InsertJob, n)
	for i := range batch {
		batch[i] = testdb.Job("big", "", "")
		if i%1000 == 0 {
			// Keys repeat across chunks: the first occurrence must win.
			batch[i] = testdb.Job("big", fmt.Sprintf("k%d", i%3000), sluicetype.DedupePermanent)
		}
	}
	res := testdb.Insert(t, ctx, d, batch...)
	seen := map[int64]bool{}
	var last int64
	for i, r := range res {
		if i%1000 == 0 && i >= 3000 {
			if !r.Duplicate || r.ID != res[i%3000].ID {
				t.Fatalf("row %d: %+v, want duplicate of %d", i, r, res[i%3000].ID)
			}
			continue
		}
		if r.Duplicate || seen[r.ID] {
			t.Fatalf("row %d: %+v", i, r)
		}
		seen[r.ID] = true
		// Keyed rows are inserted in key order; keyless rows keep theirs.
		if i%1000 != 0 {
			if r.ID <= last {
				t.Fatalf("keyless row %d: %+v after id %d", i, r, last)
			}
			last = r.ID
		}
	}
	st, err := d.Stats(ctx)
	if err != nil || len(st) != 1 || st[0].Pending != int64(len(seen)) {
		t.Fatalf("stats %+v, %v; want %d pending", st, err, len(seen))
	}
}
