package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// requireNoDefaultDB fails when a command fell back to the default
// database, which SQLite would have created as sluice.db in dir.
func requireNoDefaultDB(t *testing.T, dir string) {
	t.Helper()
	require.NoFileExists(t, filepath.Join(dir, "sluice.db"), "a command used the default database instead of the config's")
}

// seed enqueues one job through the library and returns its id.
func seed(t *testing.T, d driver.Driver, p sluice.EnqueueParams) int64 {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	r, err := c.Enqueue(context.Background(), p)
	require.NoError(t, err)
	return r.ID
}

func jobStatus(t *testing.T, d driver.Driver, id int64) sluicetype.Status {
	t.Helper()
	j, err := d.GetJob(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

// Every command that uses the database takes it from db: in the config file
// when neither --db nor SLUICE_DB is set, and none of them falls back to
// ./sluice.db. Each command is checked on its own, against the database.
func TestConfigFileChoosesTheDatabase(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		cfg, logPath := writeConfig(t, dbConfig(tg, ""))
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		// Each command runs in a working directory of its own, with no
		// sluice.yaml and no sluice.db, and must leave no sluice.db there.
		sluiceCmd := func(t *testing.T, stdin string, args ...string) proctest.Result {
			t.Helper()
			wd := t.TempDir()
			r := runIn(t, wd, env, stdin, append([]string{"--config", cfg}, args...)...)
			require.Equal(t, 0, r.Code, "sluice %s: %s", strings.Join(args, " "), r.Stderr)
			requireNoDefaultDB(t, wd)
			return r
		}

		t.Run("migrate", func(t *testing.T) {
			wd := t.TempDir()
			fresh := testdb.Prefix() // tables that do not exist yet
			fd, err := dburl.Open(tg.URL, dburl.Options{Prefix: fresh})
			require.NoError(t, err)
			t.Cleanup(func() { testdb.Drop(fd, fresh); fd.Close() })
			r := runIn(t, wd, []string{"SLUICE_PREFIX=" + fresh}, "", "--config", cfg, "migrate")
			require.Equal(t, 0, r.Code, r.Stderr)
			cur, latest, err := fd.SchemaVersion(context.Background())
			require.NoError(t, err)
			require.Equal(t, latest, cur, "migrate created the config's database")
			db := dburl.Redact(tg.URL)
			require.Equal(t, fmt.Sprintf("%s: schema version %d (upgraded from 0)\n%s: job type settings written from %s: 2\n",
				db, latest, db, cfg), r.Stdout, "the config's types are recorded for plain-SQL enqueues")
			requireNoDefaultDB(t, wd)
		})
		t.Run("enqueue", func(t *testing.T) {
			r := sluiceCmd(t, "", "enqueue", "report", "--queue", "cli-enqueue", "--key", "cfg-1")
			var res sluice.EnqueueResult
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
			j, err := d.GetJob(context.Background(), res.ID)
			require.NoError(t, err)
			require.Equal(t, "cfg-1", j.Key)
		})
		t.Run("enqueue --ndjson", func(t *testing.T) {
			lines := `{"type":"nd","queue":"cli-ndjson"}` + "\n" + `{"type":"nd","queue":"cli-ndjson"}` + "\n"
			r := sluiceCmd(t, lines, "enqueue", "--ndjson", "-")
			require.JSONEq(t, `{"inserted":2,"duplicates":0}`, r.Stdout)
			jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Queue: "cli-ndjson"})
			require.NoError(t, err)
			require.Len(t, jobs, 2)
		})
		t.Run("jobs list and show", func(t *testing.T) {
			id := seed(t, d, sluice.EnqueueParams{Type: "listed", Queue: "cli-jobs", Key: "listed-1"})
			r := sluiceCmd(t, "", "jobs", "list", "--json", "--type", "listed")
			require.Equal(t, 1, strings.Count(r.Stdout, "\n"), r.Stdout)
			require.Contains(t, r.Stdout, fmt.Sprintf(`"id":%d,`, id))
			r = sluiceCmd(t, "", "jobs", "show", fmt.Sprint(id), "--json")
			require.Contains(t, r.Stdout, `"key":"listed-1"`)
		})
		t.Run("jobs cancel and retry", func(t *testing.T) {
			id := seed(t, d, sluice.EnqueueParams{Type: "held", Queue: "cli-jobs"})
			sluiceCmd(t, "", "jobs", "cancel", fmt.Sprint(id))
			require.Equal(t, sluicetype.StatusCancelled, jobStatus(t, d, id))
			sluiceCmd(t, "", "jobs", "retry", fmt.Sprint(id))
			require.Equal(t, sluicetype.StatusPending, jobStatus(t, d, id))
		})
		t.Run("stats", func(t *testing.T) {
			seed(t, d, sluice.EnqueueParams{Type: "counted", Queue: "cli-stats"})
			r := sluiceCmd(t, "", "stats", "--json")
			require.Contains(t, r.Stdout, `"queue":"cli-stats"`)
		})
		t.Run("queues pause and resume", func(t *testing.T) {
			// A queue is known by its jobs (an unknown one is refused).
			seed(t, d, sluice.EnqueueParams{Type: "counted", Queue: "cli-paused"})
			sluiceCmd(t, "", "queues", "pause", "cli-paused")
			paused, err := d.PausedQueues(context.Background())
			require.NoError(t, err)
			require.True(t, paused["cli-paused"])
			sluiceCmd(t, "", "queues", "resume", "cli-paused")
			paused, err = d.PausedQueues(context.Background())
			require.NoError(t, err)
			require.False(t, paused["cli-paused"])
		})
		t.Run("run", func(t *testing.T) {
			ids := []int64{seed(t, d, sluice.EnqueueParams{Type: "append"}), seed(t, d, sluice.EnqueueParams{Type: "append"})}
			r := sluiceCmd(t, "", "run", "--type", "append", "--max-jobs", "50")
			var res struct {
				Done int `json:"done"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
			require.Equal(t, 2, res.Done)
			for _, id := range ids {
				require.Equal(t, sluicetype.StatusSuccess, jobStatus(t, d, id))
			}
		})
		t.Run("work", func(t *testing.T) {
			ids := []int64{seed(t, d, sluice.EnqueueParams{Type: "append"}), seed(t, d, sluice.EnqueueParams{Type: "append"})}
			wd := t.TempDir()
			w := startIn(t, wd, env, "--config", cfg, "work")
			testdb.WaitFor(t, 30*time.Second, "the worker ran the config database's jobs", func() bool {
				return jobStatus(t, d, ids[0]) == sluicetype.StatusSuccess && jobStatus(t, d, ids[1]) == sluicetype.StatusSuccess
			})
			require.NoError(t, w.Term(t, 2*time.Minute))
			b, err := os.ReadFile(logPath)
			require.NoError(t, err)
			require.Contains(t, strings.Fields(string(b)), fmt.Sprint(ids[1]))
			requireNoDefaultDB(t, wd)
		})
		t.Run("serve", func(t *testing.T) {
			wd := t.TempDir()
			addr := testdb.FreeAddr(t)
			s := startIn(t, wd, env, "--config", cfg, "serve", "--listen", addr)
			var resp *http.Response
			require.Eventually(t, func() bool {
				var err error
				resp, err = http.Post("http://"+addr+"/v1/jobs", "application/json",
					strings.NewReader(`{"type":"served","queue":"cli-serve","key":"served-1"}`))
				return err == nil
			}, 15*time.Second, 50*time.Millisecond)
			require.Equal(t, http.StatusCreated, resp.StatusCode)
			var res sluice.EnqueueResult
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
			resp.Body.Close()
			j, err := d.GetJob(context.Background(), res.ID)
			require.NoError(t, err)
			require.Equal(t, "served-1", j.Key)
			require.NoError(t, s.Term(t, 2*time.Minute))
			requireNoDefaultDB(t, wd)
		})
	})
}

// The config file is found through --config, $SLUICE_CONFIG or ./sluice.yaml.
func TestConfigFileDiscovery(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, tg := testdb.OpenURL(t, name)
			cfg, _ := writeConfig(t, dbConfig(tg, ""))
			prefix := "SLUICE_PREFIX=" + tg.Prefix
			cases := []struct {
				way  string
				dir  string // the working directory
				env  []string
				args []string
			}{
				{"--config", t.TempDir(), []string{prefix}, []string{"--config", cfg}},
				{"SLUICE_CONFIG", t.TempDir(), []string{prefix, "SLUICE_CONFIG=" + cfg}, nil},
				{"./sluice.yaml", filepath.Dir(cfg), []string{prefix}, nil},
			}
			for _, c := range cases {
				r := runIn(t, c.dir, c.env, "", append(c.args, "enqueue", "found", "--queue", "cli-found", "--key", c.way)...)
				require.Equal(t, 0, r.Code, "%s: %s", c.way, r.Stderr)
				jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Queue: "cli-found", KeyPrefix: c.way})
				require.NoError(t, err)
				require.Len(t, jobs, 1, "the job enqueued with %s is in the config's database", c.way)
				requireNoDefaultDB(t, c.dir)
			}
		})
	}
}

// One precedence for the database: --db, then SLUICE_DB, then db: in the
// config file (itself from --config, then SLUICE_CONFIG, then ./sluice.yaml),
// then sqlite:sluice.db. Each case enqueues a job and finds it in the one
// database it should be in, and in no other.
func TestDatabasePrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	local := t.TempDir() // a working directory with a sluice.yaml
	bare := t.TempDir()  // one without, where the default database lives
	urls := map[string]string{"default": "sqlite:" + filepath.Join(bare, "sluice.db")}
	for _, n := range []string{"flag", "env", "cfgflag", "cfgenv", "cfglocal"} {
		urls[n] = "sqlite:" + filepath.Join(dir, n+".db")
	}
	drivers := map[string]driver.Driver{}
	for n, u := range urls {
		d, err := dburl.Open(u, dburl.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		_, err = d.Migrate(context.Background())
		require.NoError(t, err)
		drivers[n] = d
	}
	writeCfg := func(path, db string) string {
		require.NoError(t, os.WriteFile(path, []byte("db: "+urls[db]+"\n"), 0o644))
		return path
	}
	cfgFlag := writeCfg(filepath.Join(dir, "flag.yaml"), "cfgflag")
	cfgEnv := writeCfg(filepath.Join(dir, "env.yaml"), "cfgenv")
	writeCfg(filepath.Join(local, "sluice.yaml"), "cfglocal")

	cases := []struct {
		name string
		dir  string
		env  []string
		args []string
		want string
	}{
		{"--db beats everything", local, []string{"SLUICE_DB=" + urls["env"], "SLUICE_CONFIG=" + cfgEnv}, []string{"--db", urls["flag"], "--config", cfgFlag}, "flag"},
		{"SLUICE_DB beats the config", local, []string{"SLUICE_DB=" + urls["env"], "SLUICE_CONFIG=" + cfgEnv}, []string{"--config", cfgFlag}, "env"},
		{"--config beats SLUICE_CONFIG", local, []string{"SLUICE_CONFIG=" + cfgEnv}, []string{"--config", cfgFlag}, "cfgflag"},
		{"SLUICE_CONFIG beats ./sluice.yaml", local, []string{"SLUICE_CONFIG=" + cfgEnv}, nil, "cfgenv"},
		{"./sluice.yaml beats the default", local, nil, nil, "cfglocal"},
		{"the default", bare, nil, nil, "default"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runIn(t, c.dir, c.env, "", append(c.args, "enqueue", "prec", "--key", c.name)...)
			require.Equal(t, 0, r.Code, r.Stderr)
			for n, d := range drivers {
				jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{KeyPrefix: c.name})
				require.NoError(t, err)
				if n == c.want {
					require.Len(t, jobs, 1, "the job is in %s", n)
				} else {
					require.Empty(t, jobs, "the job is not in %s", n)
				}
			}
		})
	}
	requireNoDefaultDB(t, local)
}

// Only migrate creates a SQLite database: every other command given a file
// that does not exist says so and leaves no file behind.
func TestOnlyMigrateCreatesSQLiteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	url := "sqlite:" + missing
	cfg, _ := writeConfig(t, "")
	cfgWithDB, _ := writeConfig(t, "db: "+url+"\n")
	want := "no database at " + url
	onDB := []string{"--db", url}
	withCfg := []string{"--db", url, "--config", cfg}
	viaCfg := []string{"--config", cfgWithDB}
	cases := []struct {
		name  string
		flags []string
		args  []string
	}{
		{"enqueue", onDB, []string{"enqueue", "t"}},
		{"enqueue --ndjson", onDB, []string{"enqueue", "--ndjson", "-"}},
		{"jobs list", onDB, []string{"jobs", "list"}},
		{"jobs show", onDB, []string{"jobs", "show", "1"}},
		{"jobs retry", onDB, []string{"jobs", "retry", "--failed"}},
		{"jobs cancel", onDB, []string{"jobs", "cancel", "1"}},
		{"jobs purge", onDB, []string{"jobs", "purge", "--status", "success", "--older-than", "1d"}},
		{"stats", onDB, []string{"stats"}},
		{"queues pause", onDB, []string{"queues", "pause", "default"}},
		{"circuit open", onDB, []string{"circuit", "open", "t"}},
		{"run", withCfg, []string{"run"}},
		{"work", withCfg, []string{"work"}},
		{"serve", withCfg, []string{"serve", "--listen", "127.0.0.1:0"}},
		{"schedules list", withCfg, []string{"schedules", "list"}},
		{"stats with db: in the config", viaCfg, []string{"stats"}},
		{"work with db: in the config", viaCfg, []string{"work"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runIn(t, dir, nil, `{"type":"t"}`+"\n", append(c.flags, c.args...)...)
			require.Equal(t, 1, r.Code, r.Stderr)
			require.Contains(t, r.Stderr, want)
			require.Contains(t, r.Stderr, "run `sluice migrate` first")
			require.Equal(t, 1, strings.Count(r.Stderr, "\n"), "one line: %q", r.Stderr)
			require.NoFileExists(t, missing)
		})
	}

	r := runIn(t, dir, nil, "", "--config", cfgWithDB, "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.True(t, strings.HasPrefix(r.Stdout, url+": schema version "), r.Stdout)
	require.Contains(t, r.Stdout, "(upgraded from 0)")
	require.FileExists(t, missing)
	r = runIn(t, dir, nil, "", "--config", cfgWithDB, "stats")
	require.Equal(t, 0, r.Code, r.Stderr)

	// An in-memory database has no file to check: migrate works on it, and
	// other commands get the schema error, not the missing-file one.
	r = runIn(t, dir, nil, "", "--db", "sqlite::memory:", "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = runIn(t, dir, nil, "", "--db", "sqlite::memory:", "stats")
	require.Equal(t, 1, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "database schema version 0")
	requireNoDefaultDB(t, dir)
}

// A broken config file fails every command that uses the database with the
// file, key and line, even when --db is given; version, help and lock do
// not read it.
func TestBrokenConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte("db: sqlite:q.db\nqueues:\n  default: { concurrency: -1 }\n"), 0o644))
	db := "sqlite:" + filepath.Join(dir, "other.db")
	for _, args := range [][]string{{"migrate"}, {"--db", db, "migrate"}, {"enqueue", "t"}, {"jobs", "list"}, {"stats"},
		{"queues", "pause", "q"}, {"run"}, {"work"}, {"serve"}, {"schedules", "list"}} {
		r := runIn(t, dir, nil, "", args...)
		require.Equal(t, 2, r.Code, "%v: %s", args, r.Stderr)
		require.Contains(t, r.Stderr, "sluice.yaml: queues.default.concurrency:", args)
		require.Contains(t, r.Stderr, "(line 3)", args)
	}
	require.NoFileExists(t, filepath.Join(dir, "q.db"))
	require.NoFileExists(t, filepath.Join(dir, "other.db"))

	r := runIn(t, dir, nil, "", "version")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = runIn(t, dir, nil, "", "help", "migrate")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = runIn(t, dir, nil, "", "lock", "cron-job", "--backend", "file:"+dir, "--", "true")
	require.Equal(t, 0, r.Code, r.Stderr)
}

// A CLI enqueue takes the type's queue, attempts and dedupe from the config
// file, as the API does; without them a job of a type that runs in another
// queue would sit in "default", where no worker of that type looks.
func TestEnqueueUsesTheConfigTypes(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg := proctest.Config(t, tg.URL, `queues:
  reports: { concurrency: 1 }
types:
  report: { command: ["true"], queue: reports, max_attempts: 8, dedupe: active }
`)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := runIn(t, t.TempDir(), env, "", "--config", cfg, "enqueue", "report", "--key", "r:1")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = runIn(t, t.TempDir(), env, `{"type":"report","key":"r:2"}`+"\n", "--config", cfg, "enqueue", "--ndjson", "-")
	require.Equal(t, 0, r.Code, r.Stderr)
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "report"})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.Equal(t, "reports", j.Queue, j.Key)
		require.Equal(t, 8, j.MaxAttempts, j.Key)
		require.Equal(t, sluicetype.DedupeActive, j.Dedupe, j.Key)
	}
	// An explicit flag still wins over the type's default.
	r = runIn(t, t.TempDir(), env, "", "--config", cfg, "enqueue", "report", "--key", "r:3", "--queue", "default", "--max-attempts", "2")
	require.Equal(t, 0, r.Code, r.Stderr)
	j, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "report", KeyPrefix: "r:3"})
	require.NoError(t, err)
	require.Len(t, j, 1)
	require.Equal(t, "default", j[0].Queue)
	require.Equal(t, 2, j[0].MaxAttempts)
}

// A CLI enqueue takes the type's deadline from the config file, counted
// from the job's run_at; --deadline wins; `jobs show` prints it.
func TestEnqueueDeadline(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg := proctest.Config(t, tg.URL, `types:
  report: { command: ["true"], deadline: 30m }
`)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := runIn(t, t.TempDir(), env, "", "--config", cfg, "enqueue", "report", "--key", "d:1", "--run-at", runAt.Format(time.RFC3339))
	require.Equal(t, 0, r.Code, r.Stderr)
	own := runAt.Add(2 * time.Hour)
	r = runIn(t, t.TempDir(), env, "", "--config", cfg, "enqueue", "report", "--key", "d:2", "--run-at", runAt.Format(time.RFC3339),
		"--deadline", own.Format(time.RFC3339))
	require.Equal(t, 0, r.Code, r.Stderr)
	var res struct{ ID int64 }
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res), r.Stdout)
	for key, want := range map[string]time.Time{"d:1": runAt.Add(30 * time.Minute), "d:2": own} {
		j, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "report", KeyPrefix: key})
		require.NoError(t, err)
		require.Len(t, j, 1)
		require.NotNil(t, j[0].Deadline, key)
		require.True(t, want.Equal(*j[0].Deadline), "%s: deadline %s, want %s", key, j[0].Deadline, want)
	}
	r = runIn(t, t.TempDir(), env, "", "--config", cfg, "jobs", "show", strconv.FormatInt(res.ID, 10))
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, `"deadline": "`+own.Format(time.RFC3339)+`"`)

	r = runIn(t, t.TempDir(), env, "", "--config", cfg, "enqueue", "report", "--deadline", "2001-01-01T00:00:00Z")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "deadline: 2001-01-01T00:00:00Z is in the past")
}
