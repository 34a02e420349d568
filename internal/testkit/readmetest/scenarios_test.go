package readmetest

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/authtoken"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// scenario prepares what a group of blocks of one file assumes a reader has:
// setup runs before the scenario's file blocks are written, before and
// after around each run block, done after the last.
type scenario struct {
	setup         func(t *testing.T, sc *scene)
	before, after func(t *testing.T, sc *scene, b Block)
	done          func(t *testing.T, sc *scene)
}

var scenarios = map[string]scenario{
	// Blocks run from the repository root (`go build ./cmd/sluice`,
	// examples/...), in a copy of the repository.
	"repo": {setup: setupRepo, after: resetRepo},
	// The MySQL set-up, on the local MariaDB.
	"mysql": {setup: setupMySQL, done: checkMySQL},
	// An app directory (~/app) with sluice.yaml, the MySQL database and a
	// stand-in `think` console; blocks that call the API get a running
	// `sluice serve`.
	"php": {setup: setupPHP, before: servePHP, done: checkPHP},
	// The batch worked example on SQLite, with the tables it reads.
	"batch": {setup: setupBatch, done: checkBatch},
	// The archive worked example on SQLite: orders in sluice.db, the
	// archive in a second database file, archive.db.
	"archive": {setup: setupArchive, done: checkArchive},
	// An empty directory with sluice on PATH: the blocks make their own
	// SQLite file, as the reader's first `sluice migrate` does.
	"sqlite": {setup: func(*testing.T, *scene) {}},
	// The app directory (~/app) with its stand-in `think` console and no
	// database: crontab lines that wrap the app's commands.
	"cron": {setup: writeThink},
}

// --- repo ---------------------------------------------------------------

// setupRepo copies the module (without .git and local databases) into the
// scene. Between blocks resetRepo removes every file a block created
// except the ./sluice that `go build -o sluice ./cmd/sluice` made: the next
// block's identical build then finds it up to date instead of linking
// again for five seconds.
func setupRepo(t *testing.T, sc *scene) {
	root := repoRoot(t)
	sc.dir = filepath.Join(sc.home, "sluice")
	sc.files = map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "ci-artifacts" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(sc.dir, rel), 0o755)
		}
		if rel == "sluice" || strings.Contains(d.Name(), ".db") || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sc.files[rel] = true
		return os.WriteFile(filepath.Join(sc.dir, rel), b, info.Mode().Perm())
	})
	require.NoError(t, err)
}

func resetRepo(t *testing.T, sc *scene, _ Block) {
	err := filepath.WalkDir(sc.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sc.dir, p)
		if rel == "sluice" || sc.files[rel] {
			return nil
		}
		return os.Remove(p)
	})
	require.NoError(t, err)
}

// --- MySQL --------------------------------------------------------------

// appDBRe finds the MySQL URL the docs' examples use.
var appDBRe = regexp.MustCompile(`mysql://(\w+):(\w+)@127\.0\.0\.1:3306/(\w+)`)

// appDB creates, idempotently, the MySQL user and database the docs'
// examples name, as a reader would have them, and returns their URL. The
// scene's tables go under a fresh SLUICE_PREFIX and are dropped at the end.
func appDB(t *testing.T, sc *scene) string {
	t.Helper()
	var url string
	for _, b := range allBlocks(t) {
		if b.Kind() != "run" && b.Kind() != "file" {
			continue
		}
		for _, m := range appDBRe.FindAllString(b.Text, -1) {
			require.True(t, url == "" || url == m, "%s: the examples name two MySQL databases: %s and %s", b, url, m)
			url = m
		}
	}
	require.NotEmpty(t, url, "no MySQL URL in the docs' examples")
	m := appDBRe.FindStringSubmatch(url)
	user, pass, db := m[1], m[2], m[3]
	admin, _ := testdb.OpenURL(t, "mysql") // skips, or fails in CI, without MariaDB
	ctx := context.Background()
	stmts := []string{"CREATE DATABASE IF NOT EXISTS " + db + " CHARACTER SET utf8mb4"}
	// 'user'@'localhost' too: a client on 127.0.0.1 may be matched as localhost.
	for _, host := range []string{"%", "localhost"} {
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s'", user, host, pass),
			fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'%s'", db, user, host))
	}
	for _, s := range stmts {
		_, err := admin.DB().ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
	prefix := testdb.Prefix()
	sc.env["SLUICE_PREFIX"] = prefix
	t.Cleanup(func() {
		if d, err := dburl.Open(url, dburl.Options{Prefix: prefix}); err == nil {
			testdb.Drop(d, prefix)
			d.Close()
		}
	})
	return url
}

func setupMySQL(t *testing.T, sc *scene) { sc.appURL = appDB(t, sc) }

// jobsOf lists the scene's jobs of a type in the app database.
func jobsOf(t *testing.T, sc *scene, typ string) []sluicetype.JobRow {
	t.Helper()
	d, err := dburl.Open(sc.appURL, dburl.Options{Prefix: sc.env["SLUICE_PREFIX"]})
	require.NoError(t, err)
	defer d.Close()
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: typ})
	require.NoError(t, err)
	return jobs
}

func checkMySQL(t *testing.T, sc *scene) {
	jobs := jobsOf(t, sc, "report")
	require.Len(t, jobs, 1, "the block's enqueue reached the MySQL database")
	require.JSONEq(t, `{"day":"2026-11-30"}`, string(jobs[0].Payload))
}

// --- PHP app ------------------------------------------------------------

// think stands in for the app's console (ThinkPHP's `php think`).
const think = `<?php
// A stand-in for the application's console: prints the command it was given.
echo "think " . implode(" ", array_slice($argv, 1)) . "\n";
`

// apiAddr is where the docs' config listens: sluice's default, which
// the reader's crontab and curl lines name, so the scene cannot move it to
// a free port.
const apiAddr = "127.0.0.1:8080"

func setupPHP(t *testing.T, sc *scene) {
	_, err := exec.LookPath("php")
	require.NoError(t, err, "php is needed for the docs' PHP examples (.ci/run installs it)")
	holdAPIAddr(t)
	ln, err := net.Listen("tcp", apiAddr)
	require.NoError(t, err, "the docs' examples listen on %s, which is taken", apiAddr)
	ln.Close()
	sc.appURL = appDB(t, sc)
	sc.env["SLUICE_TOKEN"] = authtoken.New()
	sc.env["HOOK_SECRET"] = testdb.Prefix() + "secret"
	writeThink(t, sc)
}

func writeThink(t *testing.T, sc *scene) {
	require.NoError(t, os.WriteFile(filepath.Join(sc.dir, "think"), []byte(think), 0o644))
}

// holdAPIAddr waits for, and holds until the test ends, an flock that
// this scene takes in every checkout on the machine: two runs of this
// package at once (two developers' checkouts) take turns at apiAddr
// instead of one failing because the other's `sluice serve` has it.
func holdAPIAddr(t *testing.T) {
	path := filepath.Join(os.TempDir(), "sluice-readmetest-8080.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX), "flock %s", path)
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for another checkout's README run to free %s", waited.Round(time.Second), apiAddr)
	}
	t.Cleanup(func() { f.Close() }) // after the serve cleanup registered later: last in, first out
}

// servePHP starts `sluice serve` with the README's config before the first
// block that calls its API, as the reader's would be running by then.
func servePHP(t *testing.T, sc *scene, b Block) {
	if sc.serving || !strings.Contains(b.Text, apiAddr) {
		return
	}
	sc.serving = true
	logf, err := os.Create(filepath.Join(sc.scripts, "serve.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config", "sluice.yaml", "serve")
	cmd.Dir = sc.dir
	cmd.Env = sc.environ()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stopGroup(cmd.Process.Pid)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("sluice serve:\n%s", out)
		}
	})
	testdb.WaitFor(t, 15*time.Second, "sluice serve answers /healthz", func() bool { return proctest.Healthy("http://" + apiAddr) })
}

// checkPHP: the job the app enqueued (once, though twice asked) was run by
// the cron trigger or sluice serve's workers through the app's console.
// A worker may have claimed it just before the cron pass, which then finds
// nothing to run, so the check waits for that worker's run to end.
func checkPHP(t *testing.T, sc *scene) {
	var jobs []sluicetype.JobRow
	testdb.WaitFor(t, 15*time.Second, "the report job leaves processing", func() bool {
		jobs = jobsOf(t, sc, "report")
		return len(jobs) != 1 || jobs[0].Status != sluicetype.StatusProcessing
	})
	require.Len(t, jobs, 1, "one job for the key, however many enqueues")
	require.Equal(t, sluicetype.StatusSuccess, jobs[0].Status, "sluice serve's workers or the cron pass ran it: %+v", jobs[0])
	require.Contains(t, jobs[0].Result, "think report:build")
}

// --- batch --------------------------------------------------------------

const (
	batchTenants = 3
	batchOrders  = 600 // per tenant
)

// setupBatch migrates the scene's SQLite file and creates the tables the
// batch example reads: tenants, orders (some open and expired, some open
// and not, some already closed) and a replica_status for its throttle.
func setupBatch(t *testing.T, sc *scene) {
	sc.sluice(t, "migrate")
	db, err := sql.Open("sqlite", filepath.Join(sc.dir, "sluice.db"))
	require.NoError(t, err)
	defer db.Close()
	stmts := []string{
		`CREATE TABLE tenants (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant_id INTEGER NOT NULL, status TEXT NOT NULL,
		   created_at TEXT NOT NULL, expires_at TEXT NOT NULL)`,
		`CREATE INDEX orders_expiry ON orders (tenant_id, status, created_at, id)`,
		`CREATE TABLE replica_status (seconds_behind INTEGER NOT NULL)`,
		`INSERT INTO replica_status VALUES (0)`,
	}
	for _, s := range stmts {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	tx, err := db.Begin()
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for tenant := 1; tenant <= batchTenants; tenant++ {
		_, err := tx.Exec(`INSERT INTO tenants VALUES (?)`, tenant)
		require.NoError(t, err)
		for i := range batchOrders {
			status, expires := "open", "2999-01-01 00:00:00"
			if i%2 == 0 {
				expires = "2020-01-01 00:00:00"
			}
			if i%5 == 0 {
				status = "closed"
			}
			_, err := tx.Exec(`INSERT INTO orders (tenant_id, status, created_at, expires_at) VALUES (?, ?, ?, ?)`,
				tenant, status, base.Add(time.Duration(i)*time.Second).Format(time.DateTime), expires)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tx.Commit())
}

// checkBatch: every expired open order was closed, and nothing else.
func checkBatch(t *testing.T, sc *scene) {
	db, err := sql.Open("sqlite", filepath.Join(sc.dir, "sluice.db"))
	require.NoError(t, err)
	defer db.Close()
	count := func(where string) int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders WHERE "+where).Scan(&n))
		return n
	}
	require.Zero(t, count("status = 'open' AND expires_at < CURRENT_TIMESTAMP"), "expired orders left open")
	// Per tenant: i%2 == 1 and i%5 != 0 stay open.
	open := 0
	for i := range batchOrders {
		if i%2 == 1 && i%5 != 0 {
			open++
		}
	}
	require.Equal(t, batchTenants*open, count("status = 'open'"), "only expired orders were closed")
}

// --- archive ------------------------------------------------------------

const (
	archiveOrders = 5000
	archiveOld    = 3000 // orders created before 2026-01-01
)

// setupArchive creates orders in the scene's sluice.db, archiveOld of them
// from 2025, and an empty orders_archive, keyed by id, in archive.db.
func setupArchive(t *testing.T, sc *scene) {
	sc.sluice(t, "migrate")
	const ddl = `(id INTEGER PRIMARY KEY, tenant_id INTEGER NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL)`
	src, err := sql.Open("sqlite", filepath.Join(sc.dir, "sluice.db"))
	require.NoError(t, err)
	defer src.Close()
	_, err = src.Exec("CREATE TABLE orders " + ddl)
	require.NoError(t, err)
	tx, err := src.Begin()
	require.NoError(t, err)
	for id := 1; id <= archiveOrders; id++ {
		at := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Hour)
		if id > archiveOld {
			at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Minute)
		}
		_, err := tx.Exec("INSERT INTO orders VALUES (?, ?, 'paid', ?)", id, id%7, at.Format(time.DateTime))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	dst, err := sql.Open("sqlite", filepath.Join(sc.dir, "archive.db"))
	require.NoError(t, err)
	defer dst.Close()
	_, err = dst.Exec("CREATE TABLE orders_archive " + ddl)
	require.NoError(t, err)
}

// checkArchive: the orders from before 2026 moved to archive.db, each
// once, and the newer ones stayed.
func checkArchive(t *testing.T, sc *scene) {
	count := func(file, q string) int {
		db, err := sql.Open("sqlite", filepath.Join(sc.dir, file))
		require.NoError(t, err)
		defer db.Close()
		var n int
		require.NoError(t, db.QueryRow(q).Scan(&n))
		return n
	}
	require.Equal(t, archiveOrders-archiveOld, count("sluice.db", "SELECT COUNT(*) FROM orders"), "orders left")
	require.Zero(t, count("sluice.db", "SELECT COUNT(*) FROM orders WHERE created_at < '2026-01-01'"), "old orders left")
	require.Equal(t, archiveOld, count("archive.db", "SELECT COUNT(*) FROM orders_archive WHERE id <= 3000"), "orders archived")
	require.Equal(t, archiveOld, count("archive.db", "SELECT COUNT(*) FROM orders_archive"), "only old orders archived")
}
