package batch_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dburl"
)

// A batch that stops on an error resumes where it stopped: each chunk's
// writes and its checkpoint commit together, so the next Run starts after
// the last chunk done, and no row is written twice. (An error that is not
// transient stops the run at once; a transient one is retried per
// Batch.Retry first.)
func ExampleBatch_Run_resume() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := dburl.Open("sqlite:"+filepath.Join(dir, "app.db"), dburl.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if _, err := d.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)",
		"CREATE TABLE archive (invoice_id INTEGER PRIMARY KEY)",
		"INSERT INTO invoices (id, total) VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)",
	} {
		if _, err := d.DB().ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	storeDown := true // the first run meets an outage at invoice 3
	b := &batch.Batch{
		Name:      "archive-invoices",
		Source:    "SELECT id FROM invoices",
		Key:       []string{"id"},
		ChunkSize: 2,
		Sink: batch.FuncSink(func(ctx context.Context, tx *sql.Tx, rows []batch.Row) error {
			var ids []any
			for _, r := range rows {
				if storeDown && r["id"] == int64(3) {
					return errors.New("archive store unavailable")
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO archive (invoice_id) VALUES (?)", r["id"]); err != nil {
					return err // a second write of a row would fail here
				}
				ids = append(ids, r["id"])
			}
			fmt.Println("archived", fmt.Sprint(ids...))
			return nil
		}),
	}
	if err := b.Run(ctx, d); err != nil {
		fmt.Println("first run stopped:", err)
	}
	storeDown = false // the next run, by hand, cron or a job: the same call
	if err := b.Run(ctx, d); err != nil {
		log.Fatal(err)
	}
	var n int
	if err := d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM archive").Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("rows archived:", n)
	// Output:
	// archived 1 2
	// first run stopped: batch archive-invoices shard all chunk after cursor [2]: sink: archive store unavailable
	// archived 3 4
	// archived 5 6
	// rows archived: 6
}
