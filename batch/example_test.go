package batch_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dburl"
)

// A resumable batch over a table: chunks of 2 rows in id order, each
// written and checkpointed in one transaction, so that a run stopped at
// any point resumes after the last chunk done.
func ExampleBatch_Run() {
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
	if _, err := d.Migrate(ctx); err != nil { // the checkpoints table
		log.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, normalized TEXT)",
		"INSERT INTO users (id, email) VALUES (1, 'Ada@Example.com'), (2, 'BOB@example.com'), (3, 'eve@Example.COM'), (4, 'joe@example.com'), (5, 'Kim@Example.com')",
	} {
		if _, err := d.DB().ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	b := &batch.Batch{
		Name:      "normalize-emails",
		Source:    "SELECT id, email FROM users",
		Key:       []string{"id"},
		ChunkSize: 2,
		Sink: batch.FuncSink(func(ctx context.Context, tx *sql.Tx, rows []batch.Row) error {
			fmt.Println("chunk of", len(rows))
			for _, r := range rows {
				if _, err := tx.ExecContext(ctx, "UPDATE users SET normalized = lower(email) WHERE id = ?", r["id"]); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	if err := b.Run(ctx, d); err != nil {
		log.Fatal(err)
	}
	cps, err := batch.Checkpoints(ctx, d, "normalize-emails")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cps[0].Shard, cps[0].Status, cps[0].RowsDone, "rows in", cps[0].ChunksDone, "chunks")
	// Output:
	// chunk of 2
	// chunk of 2
	// chunk of 1
	// all done 5 rows in 3 chunks
}
