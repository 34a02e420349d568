package sluicetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetest"
)

// exampleT stands in for the *testing.T a test function receives, so that
// these examples run under `go test` as examples: a failed assertion
// panics with its message, which fails the example, where a test's t
// would fail the test. In your tests, pass t itself.
type exampleT struct{ testing.TB }

func (exampleT) Helper() {}

func (exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// openTestDB opens a migrated SQLite database in a fresh directory, as a
// test's setup would (t.TempDir() in a real test).
func openTestDB() (driver.Driver, func()) {
	dir, err := os.MkdirTemp("", "sluicetest-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "test.db"), dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	if _, err := d.DB().Exec("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)"); err != nil {
		log.Fatal(err)
	}
	return d, func() { d.Close(); os.RemoveAll(dir) }
}

// WelcomeEmail is the typed job that signUp enqueues.
type WelcomeEmail struct {
	UserID int64  `json:"user_id"`
	To     string `json:"to"`
}

func (WelcomeEmail) Kind() string { return "welcome_email" }

// signUp is the application code under test: it adds a user and, in the
// same transaction, enqueues the welcome email, unless the address is a
// test address.
func signUp(ctx context.Context, tx *sql.Tx, client *sluice.Client, email string) (int64, error) {
	res, err := tx.ExecContext(ctx, "INSERT INTO users (email) VALUES (?)", email)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if strings.HasSuffix(email, "@example.test") {
		return id, nil
	}
	_, err = client.EnqueueArgsTx(ctx, tx, WelcomeEmail{UserID: id, To: email}, sluice.EnqueueParams{
		Key: fmt.Sprintf("welcome:%d", id),
	})
	return id, err
}

// Assert that code under test enqueued a job in its transaction: with
// Opts.Tx the helpers see the uncommitted job, without it only committed
// ones.
func ExampleRequireEnqueued() {
	var t testing.TB = exampleT{} // in a test: the test's t
	ctx := context.Background()
	d, done := openTestDB()
	defer done()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}

	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	id, err := signUp(ctx, tx, client, "ada@example.com")
	if err != nil {
		log.Fatal(err)
	}
	key := fmt.Sprintf("welcome:%d", id)
	job := sluicetest.RequireEnqueued(ctx, t, client, "welcome_email", &sluicetest.Opts{Key: key, Tx: tx})
	fmt.Println("in the transaction:", job.Type, job.Status)
	sluicetest.RequireNotEnqueued(ctx, t, client, "welcome_email", nil) // not committed yet

	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	job = sluicetest.RequireEnqueued(ctx, t, client, "welcome_email", &sluicetest.Opts{
		Key:     key,
		Payload: map[string]any{"user_id": id, "to": "ada@example.com"}, // compared as JSON
	})
	fmt.Println("committed:", string(job.Payload))
	// Output:
	// in the transaction: welcome_email pending
	// committed: {"user_id":1,"to":"ada@example.com"}
}

// Assert that code under test enqueued nothing: a test address gets no
// welcome email.
func ExampleRequireNotEnqueued() {
	var t testing.TB = exampleT{} // in a test: the test's t
	ctx := context.Background()
	d, done := openTestDB()
	defer done()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := signUp(ctx, tx, client, "bot@example.test"); err != nil {
		log.Fatal(err)
	}
	sluicetest.RequireNotEnqueued(ctx, t, client, "welcome_email", &sluicetest.Opts{Tx: tx})
	fmt.Println("no welcome email for a test address")
	// Output:
	// no welcome email for a test address
}

// Assert on a typed job: the type is the args' Kind, and the newest
// matching job's payload comes back decoded.
func ExampleRequireEnqueuedArgs() {
	var t testing.TB = exampleT{} // in a test: the test's t
	ctx := context.Background()
	d, done := openTestDB()
	defer done()
	client, err := sluice.NewClient(sluice.Config{Driver: d})
	if err != nil {
		log.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	for _, email := range []string{"ada@example.com", "bob@example.com"} {
		if _, err := signUp(ctx, tx, client, email); err != nil {
			log.Fatal(err)
		}
	}
	args := sluicetest.RequireEnqueuedArgs[WelcomeEmail](ctx, t, client, &sluicetest.Opts{Tx: tx})
	fmt.Printf("newest: %+v\n", args)
	args = sluicetest.RequireEnqueuedArgs[WelcomeEmail](ctx, t, client, &sluicetest.Opts{Key: "welcome:1", Tx: tx})
	fmt.Printf("by key: %+v\n", args)
	// Output:
	// newest: {UserID:2 To:bob@example.com}
	// by key: {UserID:1 To:ada@example.com}
}

// Test a handler through the real execution path: enqueue as production
// does, then Work runs the type's pending jobs now, claimed, run and
// completed, retried or failed as a worker would.
func ExampleWork() {
	var t testing.TB = exampleT{} // in a test: the test's t
	ctx := context.Background()
	d, done := openTestDB()
	defer done()

	var sent []string
	types := map[string]sluice.Type{}
	sluice.AddWorker(types, sluice.WorkerFunc[WelcomeEmail](func(ctx context.Context, job *sluice.Job, e WelcomeEmail) error {
		if strings.HasPrefix(e.To, "bounce@") {
			return sluice.Permanent(errors.New("mailbox does not exist"))
		}
		sent = append(sent, e.To)
		return nil
	}), sluice.Type{})
	client, err := sluice.NewClient(sluice.Config{Driver: d, Types: types}) // not started: Work runs the jobs
	if err != nil {
		log.Fatal(err)
	}
	for i, to := range []string{"ada@example.com", "bounce@example.com"} {
		if _, err := client.EnqueueArgs(ctx, WelcomeEmail{UserID: int64(i + 1), To: to}, sluice.EnqueueParams{}); err != nil {
			log.Fatal(err)
		}
	}

	res := sluicetest.Work(ctx, t, client, "welcome_email")
	fmt.Printf("done %d, failed %d, sent to %v\n", res.Done, res.Failed, sent)
	failed := sluicetest.RequireEnqueued(ctx, t, client, "welcome_email", &sluicetest.Opts{Status: "failed"})
	fmt.Println("failed job:", failed.LastError)
	// Output:
	// done 1, failed 1, sent to [ada@example.com]
	// failed job: mailbox does not exist
}
