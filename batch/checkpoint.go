package batch

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/driver"
)

// Checkpoint is one shard's progress as stored.
type Checkpoint struct {
	Batch      string    `json:"batch"`
	Shard      string    `json:"shard"`
	Cursor     string    `json:"cursor"` // JSON array of the last key done; "" before the first chunk
	RowsDone   int64     `json:"rows_done"`
	ChunksDone int64     `json:"chunks_done"`
	ChunkSize  int       `json:"chunk_size"`
	Status     string    `json:"status"`
	LastError  string    `json:"last_error,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func table(prefix string) string { return prefix + "checkpoints" }

func selectCheckpoint(d dialect, prefix string) string {
	return "SELECT batch, shard, " + d.quote("cursor") + ", rows_done, chunks_done, chunk_size, status, last_error, owner, version, created_at, updated_at FROM " + table(prefix)
}

func scanCheckpoint(sc interface{ Scan(...any) error }) (Checkpoint, error) {
	var c Checkpoint
	var cursor, lastErr, owner sql.NullString
	var created, updated driver.Time
	err := sc.Scan(&c.Batch, &c.Shard, &cursor, &c.RowsDone, &c.ChunksDone, &c.ChunkSize, &c.Status, &lastErr, &owner, &c.Version, &created, &updated)
	c.Cursor, c.LastError, c.Owner = cursor.String, lastErr.String, owner.String
	c.CreatedAt, c.UpdatedAt = created.Time, updated.Time
	return c, err
}

// Status returns the checkpoints of the named batch, or of every batch
// when name is empty, ordered by batch and shard.
func Status(ctx context.Context, d driver.Driver, prefix, name string) ([]Checkpoint, error) {
	dl := dialect{d.Name()}
	q := &query{d: dl}
	q.sql.WriteString(selectCheckpoint(dl, orDefault(prefix)))
	if name != "" {
		q.sql.WriteString(" WHERE batch = " + q.bind(name))
	}
	q.sql.WriteString(" ORDER BY batch, shard")
	rows, err := d.DB().QueryContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	defer rows.Close()
	var out []Checkpoint
	for rows.Next() {
		c, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("read checkpoints: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read checkpoints: %w", err)
	}
	return out, nil
}

func orDefault(prefix string) string {
	if prefix == "" {
		return driver.DefaultPrefix
	}
	return prefix
}

// Pause marks the batch's running and failed shards paused; their runners
// stop at the next chunk boundary. It returns the shards changed.
func Pause(ctx context.Context, d driver.Driver, prefix, name string) (int64, error) {
	return setStatus(ctx, d, prefix, name, StatusPaused, StatusRunning, StatusFailed)
}

// Resume marks the batch's paused shards running again, for the next Run.
func Resume(ctx context.Context, d driver.Driver, prefix, name string) (int64, error) {
	return setStatus(ctx, d, prefix, name, StatusRunning, StatusPaused)
}

func setStatus(ctx context.Context, d driver.Driver, prefix, name, to string, from ...string) (int64, error) {
	q := &query{d: dialect{d.Name()}}
	fmt.Fprintf(&q.sql, "UPDATE %s SET status = %s, updated_at = %s WHERE batch = %s AND status IN (",
		table(orDefault(prefix)), q.bind(to), q.d.now(), q.bind(name))
	for i, f := range from {
		if i > 0 {
			q.sql.WriteString(", ")
		}
		q.sql.WriteString(q.bind(f))
	}
	q.sql.WriteString(")")
	res, err := d.DB().ExecContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return 0, fmt.Errorf("set batch %s %s: %w", name, to, err)
	}
	return res.RowsAffected()
}

// Reset deletes the batch's checkpoints, so that the next run starts over.
// A runner still going loses its shard at its next checkpoint (ErrLost).
func Reset(ctx context.Context, d driver.Driver, prefix, name string) (int64, error) {
	q := &query{d: dialect{d.Name()}}
	fmt.Fprintf(&q.sql, "DELETE FROM %s WHERE batch = %s", table(orDefault(prefix)), q.bind(name))
	res, err := d.DB().ExecContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return 0, fmt.Errorf("reset batch %s: %w", name, err)
	}
	return res.RowsAffected()
}

// defaultOwner names a runner host:pid:random; the host and pid let a
// restarted runner on the same host see that a crashed owner is gone.
func defaultOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// ownerGone reports whether owner is a process of this host that has exited.
func ownerGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}

// acquire creates the shard's checkpoint if needed and takes ownership.
// It returns the checkpoint as taken, with done set when there is nothing
// left to do.
func (r *shardRun) acquire(ctx context.Context) (Checkpoint, error) {
	db := r.drv.DB()
	tbl := table(r.b.Prefix)
	ins := &query{d: r.d}
	verb, tail := "INSERT INTO", " ON CONFLICT DO NOTHING"
	if r.d.name == "mysql" {
		verb, tail = "INSERT IGNORE INTO", ""
	}
	fmt.Fprintf(&ins.sql, "%s %s (batch, shard, status, chunk_size) VALUES (%s, %s, %s, %s)%s",
		verb, tbl, ins.bind(r.b.Name), ins.bind(r.shard.name), ins.bind(StatusRunning), ins.bind(r.b.ChunkSize), tail)
	if _, err := db.ExecContext(ctx, ins.sql.String(), ins.args...); err != nil {
		return Checkpoint{}, fmt.Errorf("create checkpoint: %w", err)
	}
	c, err := r.read(ctx)
	if err != nil {
		return c, err
	}
	switch c.Status {
	case StatusDone:
		return c, nil
	case StatusPaused:
		return c, ErrPaused
	}
	if c.Owner != "" && c.Owner != r.b.Owner && c.Status == StatusRunning && !ownerGone(c.Owner) {
		now, err := r.drv.Now(ctx)
		if err != nil {
			return c, err
		}
		if age := now.Sub(c.UpdatedAt); age < r.b.Lease {
			return c, fmt.Errorf("%w: batch %s shard %s is being run by %s (last checkpoint %s ago, lease %s); wait for it, or for the lease to expire after a crash",
				ErrBusy, r.b.Name, r.shard.name, c.Owner, age.Round(time.Millisecond), r.b.Lease)
		}
	}
	up := &query{d: r.d}
	fmt.Fprintf(&up.sql, "UPDATE %s SET owner = %s, status = %s, last_error = NULL, version = version + 1, updated_at = %s WHERE batch = %s AND shard = %s AND version = %s",
		tbl, up.bind(r.b.Owner), up.bind(StatusRunning), r.d.now(), up.bind(r.b.Name), up.bind(r.shard.name), up.bind(c.Version))
	res, err := db.ExecContext(ctx, up.sql.String(), up.args...)
	if err != nil {
		return c, fmt.Errorf("take checkpoint: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return c, fmt.Errorf("%w: batch %s shard %s was taken by another runner just now", ErrBusy, r.b.Name, r.shard.name)
	}
	c.Version++
	c.Owner, c.Status = r.b.Owner, StatusRunning
	return c, nil
}

func (r *shardRun) read(ctx context.Context) (Checkpoint, error) {
	q := &query{d: r.d}
	q.sql.WriteString(selectCheckpoint(r.d, r.b.Prefix))
	fmt.Fprintf(&q.sql, " WHERE batch = %s AND shard = %s", q.bind(r.b.Name), q.bind(r.shard.name))
	c, err := scanCheckpoint(r.drv.DB().QueryRowContext(ctx, q.sql.String(), q.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: batch %s shard %s: checkpoint deleted (reset?)", ErrLost, r.b.Name, r.shard.name)
	}
	if err != nil {
		return c, fmt.Errorf("read checkpoint: %w", err)
	}
	return c, nil
}

// advance records a chunk in the checkpoint, in tx (or straight on the
// database when tx is nil), if this runner still owns the shard.
func (r *shardRun) advance(ctx context.Context, ex driver.Querier, cursor string, rows, chunkSize int) error {
	q := &query{d: r.d}
	fmt.Fprintf(&q.sql, "UPDATE %s SET %s = %s, rows_done = rows_done + %s, chunks_done = chunks_done + 1, chunk_size = %s, version = version + 1, updated_at = %s WHERE batch = %s AND shard = %s AND version = %s",
		table(r.b.Prefix), r.d.quote("cursor"), q.bind(cursor), q.bind(rows), q.bind(chunkSize), r.d.now(),
		q.bind(r.b.Name), q.bind(r.shard.name), q.bind(r.version))
	res, err := ex.ExecContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: batch %s shard %s: the checkpoint moved on (another runner took over, or a reset)", ErrLost, r.b.Name, r.shard.name)
	}
	return nil
}

// finish sets the final status (done or failed) if this runner still owns the shard.
func (r *shardRun) finish(ctx context.Context, status, lastErr string) error {
	q := &query{d: r.d}
	var errArg any
	if lastErr != "" {
		errArg = driver.Text(lastErr, driver.MaxErrorLen, false)
	}
	fmt.Fprintf(&q.sql, "UPDATE %s SET status = %s, last_error = %s, owner = NULL, version = version + 1, updated_at = %s WHERE batch = %s AND shard = %s AND version = %s",
		table(r.b.Prefix), q.bind(status), q.bind(errArg), r.d.now(), q.bind(r.b.Name), q.bind(r.shard.name), q.bind(r.version))
	res, err := r.drv.DB().ExecContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return fmt.Errorf("mark checkpoint %s: %w", status, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: batch %s shard %s", ErrLost, r.b.Name, r.shard.name)
	}
	r.version++
	return nil
}

// release gives the shard up when the runner stops without finishing
// (paused, cancelled), so that the next runner need not wait for the lease.
// It does nothing if the shard is no longer ours.
func (r *shardRun) release(ctx context.Context) {
	q := &query{d: r.d}
	fmt.Fprintf(&q.sql, "UPDATE %s SET owner = NULL, version = version + 1 WHERE batch = %s AND shard = %s AND version = %s AND owner = %s",
		table(r.b.Prefix), q.bind(r.b.Name), q.bind(r.shard.name), q.bind(r.version), q.bind(r.b.Owner))
	if _, err := r.drv.DB().ExecContext(ctx, q.sql.String(), q.args...); err != nil {
		r.b.Log.Warn("batch: release shard", "batch", r.b.Name, "shard", r.shard.name, "error", err)
	}
}

// touch refreshes updated_at while no chunk is written (throttled), so
// that the shard's lease does not run out.
func (r *shardRun) touch(ctx context.Context) error {
	q := &query{d: r.d}
	fmt.Fprintf(&q.sql, "UPDATE %s SET updated_at = %s WHERE batch = %s AND shard = %s AND version = %s",
		table(r.b.Prefix), r.d.now(), q.bind(r.b.Name), q.bind(r.shard.name), q.bind(r.version))
	res, err := r.drv.DB().ExecContext(ctx, q.sql.String(), q.args...)
	if err != nil {
		return fmt.Errorf("touch checkpoint: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: batch %s shard %s", ErrLost, r.b.Name, r.shard.name)
	}
	return nil
}
