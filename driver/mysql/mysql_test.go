package mysql_test

import (
	"context"
	"database/sql"
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
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// modes runs a test once per claim path: SKIP LOCKED (what the test server
// supports) and the fallback of servers without it.
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
		skipUnreachable(t, err)
	}
	if d.SkipLocked() {
		t.Fatal("ForceUpdateClaim should select the fallback claim")
	}
	t.Cleanup(func() {
		testdb.Drop(d, prefix)
		d.Close()
	})
	return d
}

func complete(t *testing.T, ctx context.Context, d driver.Driver, cs ...driver.Completion) []int64 {
	t.Helper()
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: cs})
	if err != nil {
		t.Fatal(err)
	}
	return lost
}

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
	m, err := d.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := m.To
	cur, latest, err := d.SchemaVersion(ctx)
	if err != nil || cur != v || latest != v || v < 1 {
		t.Fatalf("version %d, schema %d/%d, %v", v, cur, latest, err)
	}
}

// TestMigrateLockHolders: the lock backend's holders table comes with the
// schema, and its queries record a holder and count its fence.
func TestMigrateLockHolders(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := d.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	holders := d.LockHolders()
	for want := int64(1); want <= 2; want++ {
		got, err := holders.Record(ctx, conn, "name", "holder")
		if err != nil || got != want {
			t.Fatalf("fence %d, want %d: %v", got, want, err)
		}
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
			skipUnreachable(t, err)
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
			if m, err := d.Migrate(ctx); err != nil || m.To < 1 {
				t.Errorf("migrate: version %d, %v", m.To, err)
			}
		})
	}
	wg.Wait()
}

func TestSchemaVersionMissing(t *testing.T) {
	d, err := mysql.Open(testdb.URL("mysql", t.TempDir()), mysql.Options{Prefix: testdb.Prefix()})
	if err != nil {
		skipUnreachable(t, err)
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
		r := testdb.Insert(t, ctx, d, testdb.Job("q", "perm", ""))
		if r[0].Duplicate || r[0].ID == 0 {
			t.Fatalf("first insert: %+v", r[0])
		}
		if r2 := testdb.Insert(t, ctx, d, testdb.Job("q", "perm", "")); r2[0] != (driver.InsertResult{ID: r[0].ID, Duplicate: true}) {
			t.Fatalf("second insert: %+v", r2[0])
		}
		c := testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "q", Limit: 1})
		complete(t, ctx, d, driver.Completion{ID: c[0].ID, Token: c[0].LockedBy, Status: sluicetype.StatusSuccess})
		if r3 := testdb.Insert(t, ctx, d, testdb.Job("q", "perm", "")); r3[0] != (driver.InsertResult{ID: r[0].ID, Duplicate: true}) {
			t.Fatalf("after success: %+v", r3[0])
		}

		// Active: the key frees up when the job finishes.
		a := testdb.Insert(t, ctx, d, testdb.Job("qa", "act", sluicetype.DedupeActive))
		if a2 := testdb.Insert(t, ctx, d, testdb.Job("qa", "act", sluicetype.DedupeActive)); a2[0] != (driver.InsertResult{ID: a[0].ID, Duplicate: true}) {
			t.Fatalf("active while pending: %+v", a2[0])
		}
		c = testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "qa", Limit: 1})
		if a3 := testdb.Insert(t, ctx, d, testdb.Job("qa", "act", sluicetype.DedupeActive)); a3[0] != (driver.InsertResult{ID: a[0].ID, Duplicate: true}) {
			t.Fatalf("active while processing: %+v", a3[0])
		}
		complete(t, ctx, d, driver.Completion{ID: c[0].ID, Token: c[0].LockedBy, Status: sluicetype.StatusFailed})
		if a4 := testdb.Insert(t, ctx, d, testdb.Job("qa", "act", sluicetype.DedupeActive)); a4[0].Duplicate || a4[0].ID == a[0].ID {
			t.Fatalf("active after failure: %+v", a4[0])
		}
		// Retrying the failed one would make two live holders of the key.
		if _, err := d.Retry(ctx, driver.RetryParams{ID: a[0].ID}); err == nil {
			t.Fatal("retry of a job whose key is taken should fail")
		}

		for _, consecutive := range []bool{true, false} {
			mysql.SetConsecutiveIDs(d, consecutive)
			k := fmt.Sprintf("-%v", consecutive)
			held := testdb.Insert(t, ctx, d, testdb.Job("b", "held"+k, ""))[0].ID
			res := testdb.Insert(t, ctx, d,
				testdb.Job("b", "x"+k, ""), testdb.Job("b", "x"+k, ""), testdb.Job("b", "", ""), testdb.Job("b", "held"+k, ""),
				testdb.Job("b", "y"+k, sluicetype.DedupeActive), testdb.Job("b", "x"+k+" ", ""), testdb.Job("b", "x"+k, ""), testdb.Job("b", "", ""))
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
				if j := testdb.Get(t, ctx, d, res[i].ID); j.Key != key {
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
		rr, err := d.Insert(ctx, driver.InsertParams{Tx: tx, Jobs: []driver.InsertJob{testdb.Job("tx", "in-tx", "")}})
		if err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if _, err := d.GetJob(ctx, rr[0].ID); !errors.Is(err, sluicetype.ErrNotFound) {
			t.Fatalf("rolled-back job: %v", err)
		}

		// Fields round-trip; a bad payload or an over-long queue fails.
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		p := driver.InsertJob{Queue: "f", Type: "typ", Key: "ключ", Dedupe: sluicetype.DedupeActive,
			Payload: []byte(`{"a":[1,2]}`), Priority: -3, MaxAttempts: 7, RunAt: runAt}
		j := testdb.Get(t, ctx, d, testdb.Insert(t, ctx, d, p)[0].ID)
		if j.Queue != "f" || j.Type != "typ" || j.Key != "ключ" || j.Dedupe != sluicetype.DedupeActive || !jsonEqual(j.Payload, p.Payload) ||
			j.Priority != -3 || j.MaxAttempts != 7 || !j.NextRunAt.Equal(runAt) || j.Status != sluicetype.StatusPending {
			t.Fatalf("round trip: %+v", j)
		}
		if _, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "f", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{`)}}}); err == nil {
			t.Fatal("invalid JSON payload accepted")
		}
		if _, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{testdb.Job(strings.Repeat("q", 65), "", "")}}); err == nil {
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
			batch := make([]driver.InsertJob, keys)
			for i := range batch {
				batch[i] = testdb.Job("race", fmt.Sprintf("k%d", (i+w*25)%keys), "")
			}
			<-start
			res, err := d.Insert(ctx, driver.InsertParams{Jobs: batch})
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

// skipUnreachable skips a test whose MySQL server cannot be reached, loudly,
// and fails it instead when CI requires every database.
func skipUnreachable(t *testing.T, err error) {
	t.Helper()
	if testdb.RequireAll() {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "\n!!! SKIPPING MYSQL TESTS: %v\n", err)
	t.Skip(err)
}

// TestGaleraOff: a server that is not a Galera node (the test server) is
// not taken for one; systemtest/ha/galera checks the other side on a cluster.
func TestGaleraOff(t *testing.T) {
	if d := open(t, false); d.Galera() {
		t.Fatalf("server %s reported as a Galera node", d.ServerVersion())
	}
}

// TestSchemaVersionNeverDrops: recording an older version (a slower
// migration on another Galera node, where GET_LOCK does not serialise
// them) keeps the newest, so later migrations do not re-run applied steps.
func TestSchemaVersionNeverDrops(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	if _, err := d.DB().ExecContext(ctx, d.Queries().SchemaSet, 1); err != nil {
		t.Fatal(err)
	}
	cur, latest, err := d.SchemaVersion(ctx)
	if err != nil || cur != latest {
		t.Fatalf("schema %d/%d after recording version 1, %v", cur, latest, err)
	}
}

// TestPendingIndexesPerStatus: a claim or completion of a job without a
// partition rewrites the entries of the secondary indexes that hold its
// status and no others, as before fair queues: sluice_jobs_fair (which
// took over sluice_jobs_pick's claim order), the rescue index and
// (status, id). The column that orders pending jobs with a partition in
// the rescue index is NULL for it whatever its status.
// jobsTable returns the prefixed name of d's jobs table, from its query.
func jobsTable(d *mysql.Driver) string {
	words := strings.Fields(d.Queries().Get)
	for i, w := range words {
		if strings.EqualFold(w, "FROM") {
			return words[i+1]
		}
	}
	return ""
}

func TestPendingIndexesPerStatus(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	table := jobsTable(d)
	rows, err := d.DB().QueryContext(ctx, `SELECT index_name FROM information_schema.statistics
		WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'status' ORDER BY index_name`, table)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(name, table))
	}
	rows.Close()
	if want := []string{"_fair", "_rescue", "_status_id"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("indexes holding status: %v, want %v", got, want)
	}

	plain := testdb.Insert(t, ctx, d, testdb.Job("q", "", ""))[0].ID
	part := testdb.Job("q", "", "")
	part.Partition = "A"
	parted := testdb.Insert(t, ctx, d, part)[0].ID
	partitionedQueue := func(id int64) sql.NullString {
		t.Helper()
		var q sql.NullString
		if err := d.DB().QueryRowContext(ctx, "SELECT partitioned_queue FROM "+table+" WHERE id = ?", id).Scan(&q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	if q := partitionedQueue(parted); q.String != "q" {
		t.Fatalf("pending job of partition A: partitioned_queue %v, want q", q)
	}
	claimed := testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "q", Limit: 2})
	if len(claimed) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(claimed))
	}
	for _, id := range []int64{plain, parted} {
		if q := partitionedQueue(id); q.Valid {
			t.Fatalf("running job %d: partitioned_queue %v, want NULL", id, q)
		}
	}
	for _, j := range claimed {
		complete(t, ctx, d, driver.Completion{ID: j.ID, Token: j.LockedBy, Status: sluicetype.StatusSuccess})
	}
	if q := partitionedQueue(plain); q.Valid {
		t.Fatalf("finished job: partitioned_queue %v, want NULL", q)
	}
}

// TestClaimMergesPartitions: a queue that is not fair claims its jobs
// without a partition and those with one in one global order, on both
// claim paths, and with a type.
func TestClaimMergesPartitions(t *testing.T) {
	modes(t, func(t *testing.T, d *mysql.Driver, ctx context.Context) {
		job := func(part string, prio int) driver.InsertJob {
			j := testdb.Job("q", "", "")
			j.Partition, j.Priority = part, prio
			return j
		}
		// One batch: one next_run_at, so priority and then id order them.
		res := testdb.Insert(t, ctx, d, job("", 0), job("A", 0), job("", 0), job("B", -1), job("A", 0), job("", 1))
		id := func(i int) int64 { return res[i].ID }
		want := [][]int64{{id(3), id(0)}, {id(1), id(2)}, {id(4), id(5)}}
		for n, w := range want {
			p := driver.ClaimParams{Queue: "q", Limit: 2, Token: fmt.Sprintf("tok-%d", n)}
			if n == 1 {
				p.Types = []string{"t"}
			}
			var got []int64
			for _, j := range testdb.Claim(t, ctx, d, p) {
				got = append(got, j.ID)
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("claim %d: got %v, want %v", n, got, w)
			}
		}
	})
}

// openUnmigrated opens a driver on fresh tables that it does not create,
// and returns it with their prefix.
func openUnmigrated(t *testing.T) (*mysql.Driver, string) {
	t.Helper()
	url, prefix := testdb.URL("mysql", t.TempDir()), testdb.Prefix()
	d, err := mysql.Open(url, mysql.Options{Prefix: prefix})
	if err != nil {
		skipUnreachable(t, err)
	}
	t.Cleanup(func() {
		testdb.Drop(d, prefix)
		d.Close()
	})
	return d, prefix
}

// TestMigration005DropsOnce: migration 005 drops the finished index
// where the table has it, and finds nothing to do when it runs again, as
// after a run that stopped before recording it (MySQL's DDL commits on its
// own).
func TestMigration005DropsOnce(t *testing.T) {
	ctx := context.Background()
	d, prefix := openUnmigrated(t)
	if err := mysql.MigrateTo(ctx, d, 4); err != nil {
		t.Fatal(err)
	}
	has := func() bool {
		t.Helper()
		var n int
		err := d.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.statistics
			WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, prefix+"jobs", prefix+"jobs_finished").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	if !has() {
		t.Fatal("version 4 has no finished index to drop")
	}
	for run := 1; run <= 2; run++ {
		if err := mysql.ApplyMigration(ctx, d, 5); err != nil {
			t.Fatalf("run %d of migration 5: %v", run, err)
		}
		if has() {
			t.Fatalf("run %d of migration 5 left the finished index", run)
		}
	}
	if m, err := d.Migrate(ctx); err != nil || m.From != 5 {
		t.Fatalf("upgrade from 5: %+v, %v", m, err)
	}
}

// TestUpgradeFrom011: migration 012 rebuilds the pending indexes of a
// table that holds jobs, and the jobs it held claim in their order.
func TestUpgradeFrom011(t *testing.T) {
	ctx := context.Background()
	d, prefix := openUnmigrated(t)
	if err := mysql.MigrateTo(ctx, d, 11); err != nil {
		t.Fatal(err)
	}
	// Plain inserts, as the version before took them: the driver's Insert
	// writes the newest schema's columns (deadline).
	table := prefix + "jobs"
	var res []driver.InsertResult
	for _, part := range []string{"", "A", "", "B", "A", ""} {
		r, err := d.DB().ExecContext(ctx, "INSERT INTO "+table+" (queue, type, payload, max_attempts, partition_key) VALUES ('q', 't', '{}', 3, ?)", part)
		if err != nil {
			t.Fatal(err)
		}
		id, err := r.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, driver.InsertResult{ID: id})
	}
	// Job 1 (partition A) is running and job 2 finished when the upgrade
	// comes.
	for _, stmt := range []string{
		fmt.Sprintf("UPDATE %s SET status = 'processing', locked_by = 'x', locked_until = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = %d", table, res[1].ID),
		fmt.Sprintf("UPDATE %s SET status = 'success', finished_at = UTC_TIMESTAMP(6) WHERE id = %d", table, res[2].ID),
	} {
		if _, err := d.DB().ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := d.Migrate(ctx); err != nil || m.From != 11 {
		t.Fatalf("upgrade from 11: %+v, %v", m, err)
	}
	var pending int
	if err := d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE partitioned_queue = 'q'").Scan(&pending); err != nil || pending != 2 {
		t.Fatalf("pending jobs with a partition after the upgrade: %d, want 2 (%v)", pending, err)
	}
	var got []int64
	for _, j := range testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "q", Limit: 10}) {
		got = append(got, j.ID)
	}
	if want := []int64{res[0].ID, res[3].ID, res[4].ID, res[5].ID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claimed %v after the upgrade, want %v", got, want)
	}
	st, err := d.PartitionStats(ctx, driver.PartitionStatsParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := []sluicetype.PartitionStats{{Queue: "q", Partition: "A", Running: 2}, {Queue: "q", Partition: "B", Running: 1}}; !reflect.DeepEqual(st, want) {
		t.Fatalf("partition stats after the upgrade: %v, want %v", st, want)
	}
}

// TestPurgeReadsOnlyDueRows: a purge reads the rows that are due and a few
// more, not every finished row that retention keeps. Unbounded, the scan of
// sluice_jobs_status_id went on past the due rows to the end of the status,
// fetching each row's finished_at: the whole retained table, every minute.
func TestPurgeReadsOnlyDueRows(t *testing.T) {
	ctx := context.Background()
	d := open(t, false)
	table := jobsTable(d)
	const kept, due = 5000, 10
	jobs := make([]driver.InsertJob, kept+due)
	for i := range jobs {
		jobs[i] = testdb.Job("q", "", "")
	}
	testdb.Insert(t, ctx, d, jobs...)
	// Finished now, but the first (oldest) ids were created and finished
	// ten and nine days ago, as a week of retention leaves them.
	for _, q := range []string{
		"UPDATE " + table + " SET status = 'success', finished_at = UTC_TIMESTAMP(6)",
		fmt.Sprintf("UPDATE %s SET created_at = UTC_TIMESTAMP(6) - INTERVAL 10 DAY, finished_at = UTC_TIMESTAMP(6) - INTERVAL 9 DAY ORDER BY id LIMIT %d", table, due),
	} {
		if _, err := d.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// One connection, so that its session counters are the purge's.
	d.DB().SetMaxOpenConns(1)
	indexReads := func() int64 {
		t.Helper()
		rows, err := d.DB().QueryContext(ctx, "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_key', 'Handler_read_next', 'Handler_read_prev')")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var sum int64
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		return sum
	}
	before := indexReads()
	n, err := d.Purge(ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, OlderThan: 7 * 24 * time.Hour, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	reads := indexReads() - before
	t.Logf("%d due jobs among %d kept: %d index reads", due, kept, reads)
	if n != due {
		t.Fatalf("purged %d jobs, want %d", n, due)
	}
	if reads > kept/10 {
		t.Fatalf("the purge of %d due jobs among %d kept made %d index reads, want at most %d", due, kept, reads, kept/10)
	}
	if n, err := d.Purge(ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, OlderThan: 7 * 24 * time.Hour, Limit: 1000}); err != nil || n != 0 {
		t.Fatalf("second purge: %d jobs, %v; want 0", n, err)
	}
	var left int
	if err := d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&left); err != nil || left != kept {
		t.Fatalf("%d jobs left (%v), want %d", left, err, kept)
	}
}

// TestUpgradeToLatest: the type-settings migration keeps the rows of the version
// before, those it now refuses at insert too, and replaces the CHECK
// constraints the server named with ones named after their columns.
func TestUpgradeToLatest(t *testing.T) {
	d, prefix := openUnmigrated(t)
	drivertest.ExerciseUpgrade(t, d, prefix+"jobs", 12, func(ctx context.Context, v int) error { return mysql.MigrateTo(ctx, d, v) })
	rows, err := d.DB().Query(`SELECT constraint_name FROM information_schema.table_constraints
		WHERE constraint_schema = DATABASE() AND table_name = ? AND constraint_type = 'CHECK' ORDER BY constraint_name`, prefix+"jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(n, prefix))
	}
	// MariaDB names the JSON check of a JSON column after the column.
	want := []string{"history", "payload", "jobs_business_key_check", "jobs_dedupe_check", "jobs_queue_check", "jobs_status_check", "jobs_type_check"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CHECK constraints after the upgrade: %v, want %v", got, want)
	}
}
