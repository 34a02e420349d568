package batch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// cutoff splits the fixture: ids below cutoffID are older than it.
const cutoffID = 1400

func (f *fixture) cutoff() any { return f.at(base.Add(cutoffID / 7 * time.Second)) }

// archiveTable creates tbl on f's database, shaped like the orders table.
func (f *fixture) archiveTable(t *testing.T, tbl string) {
	t.Helper()
	ts := map[string]string{"sqlite": "DATETIME", "mysql": "DATETIME(6)", "postgres": "timestamptz"}[f.d.Name()]
	f.exec(t, fmt.Sprintf(`CREATE TABLE %s (id BIGINT NOT NULL PRIMARY KEY, tenant_id INT NOT NULL, created_at %s NOT NULL,
		status VARCHAR(16) NOT NULL, hits INT NOT NULL DEFAULT 0)`, tbl, ts))
}

// requireArchived checks that the rows before the cutoff are in archive
// exactly once each and gone from the source, and the rest untouched.
func requireArchived(t *testing.T, src, dst *fixture, archive string, total int64) {
	t.Helper()
	old := int64(cutoffID - 1)
	require.Equal(t, total-old, src.count(t, "1 = 1"), "rows left in the source")
	require.Zero(t, src.count(t, fmt.Sprintf("id < %d", cutoffID)), "old rows left in the source")
	var n, distinct, lo, hi int64
	require.NoError(t, dst.d.DB().QueryRowContext(context.Background(),
		"SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM "+archive).Scan(&n, &distinct, &lo, &hi))
	require.Equal(t, old, n, "archived rows")
	require.Equal(t, n, distinct, "a row archived twice")
	require.Equal(t, []int64{1, old}, []int64{lo, hi})
}

// Several statements per chunk, in its transaction: an INSERT ... SELECT
// into the archive, then the DELETE, with IN lists and with ranges.
func TestArchiveStatements(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 3000)
		old := "created_at < " + f.literal(f.cutoff())
		for _, form := range []struct{ name, match string }{
			{"in", "id IN ({id})"},
			{"range", "id BETWEEN {min:id} AND {max:id} AND " + old},
		} {
			archive := f.prefix + "archive_" + form.name
			f.archiveTable(t, archive)
			cols := "id, tenant_id, created_at, status, hits"
			b := &batch.Batch{
				Name: "archive_" + form.name, Key: []string{"id"}, ChunkSize: 100,
				Source: "SELECT id FROM " + f.table + " WHERE " + old,
				Sink: batch.SQLSink{Statements: []string{
					"INSERT INTO " + archive + " (" + cols + ") SELECT " + cols + " FROM " + f.table + " WHERE " + form.match,
					"DELETE FROM " + f.table + " WHERE " + form.match,
				}},
			}
			require.NoError(t, b.Run(context.Background(), f.d))
			requireArchived(t, f, f, archive, 3000)
			// Put the rows back for the next form.
			f.exec(t, "INSERT INTO "+f.table+" ("+cols+") SELECT "+cols+" FROM "+archive)
		}
	})
}

// literal writes the cutoff into SQL text: a batch's source and sink
// statements take no arguments of their own.
func (f *fixture) literal(v any) string {
	switch v := v.(type) {
	case time.Time:
		if f.d.Name() == "postgres" {
			return "'" + v.Format("2006-01-02 15:04:05") + "+00'"
		}
		return "'" + v.Format("2006-01-02 15:04:05") + "'"
	}
	return "'" + v.(string) + "'"
}

// failOnce fails its first call with a retryable error after the sink it
// wraps has written: the copy has committed on the destination and the
// source's transaction rolls back, as after a kill between the two commits.
type failOnce struct {
	batch.Sink
	failed bool
}

func (s *failOnce) Write(ctx context.Context, c *batch.Chunk) error {
	if err := s.Sink.Write(ctx, c); err != nil {
		return err
	}
	if !s.failed && c.CursorBefore != "" {
		s.failed = true
		return batch.Retryable(errors.New("crash between the destination's commit and the source's"))
	}
	return nil
}

// A copy sink to another database: a chunk repeated after its copy
// committed (the source's transaction lost) copies no row twice, and every
// row is archived once and deleted once. The destination is another SQLite
// file, and on MariaDB and PostgreSQL another table reached through its own
// connection pool, so through transactions of its own.
func TestCopySinkRepeatsNoRow(t *testing.T) {
	forEachDB(t, func(t *testing.T, f *fixture) {
		f.create(t)
		f.insert(t, 1, 3000)
		dd, dtg := testdb.OpenURL(t, f.d.Name())
		dst := &fixture{d: dd, tg: dtg, prefix: dtg.Prefix}
		archive := dtg.Prefix + "archive"
		dst.archiveTable(t, archive)
		delete := &failOnce{Sink: batch.SQLSink{Statements: []string{"DELETE FROM " + f.table + " WHERE id IN ({id})"}}}
		b := &batch.Batch{
			Name: "move", Key: []string{"id"}, ChunkSize: 100,
			Source: "SELECT * FROM " + f.table + " WHERE created_at < " + f.literal(f.cutoff()),
			Sink:   batch.CopySink{Dest: dd, Table: archive, Then: delete},
			Retry:  batch.Retry{Base: time.Millisecond},
		}
		require.NoError(t, b.Run(context.Background(), f.d))
		require.True(t, delete.failed, "the chunk was repeated after its copy committed")
		requireArchived(t, f, dst, archive, 3000)
	})
}
