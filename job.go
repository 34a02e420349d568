package sluice

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/attemptlog"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job is one attempt of a job, as a handler sees it.
type Job struct {
	ID          int64
	Queue       string
	Type        string
	Key         string // business key, or ""
	Payload     json.RawMessage
	Priority    int
	Attempt     int // 1 for the first run
	MaxAttempts int
	CreatedAt   time.Time
	Partition   string // the fairness key, or ""

	db         *sql.DB
	tx         *sql.Tx
	result     *string
	httpStatus int
	exitCode   *int
	log        *sluicetype.AttemptLog
	progress   func(done, total int64, message string)
	// lease is the attempt's lease token, for ProgressToken;
	// progressShared says ProgressToken handed it out.
	lease          string
	progressShared bool
	// base is the Client's logger, which Logger writes to besides the
	// attempt's log; loggerOnce makes the logger of Logger, and
	// logBuf keeps what it wrote.
	base       *slog.Logger
	loggerOnce sync.Once
	logger     *slog.Logger
	logBuf     *attemptlog.Buffer
}

// IdempotencyKey is what a handler should use to make its effects
// idempotent: "job-<id>-<created_at in Unix microseconds>". It names this
// one job and stays the same across its attempts. It is not the business
// key: a later job with the same business key (after the first finished
// under dedupe "active", or after a purge under "permanent") must be
// applied, and would be dropped by a receiver that remembers keys. The
// creation time is in it because an id alone can come back: MariaDB
// before 10.2.4 and MySQL before 8.0 restart AUTO_INCREMENT at the largest
// id left, which a purge may have removed.
func (j *Job) IdempotencyKey() string {
	return fmt.Sprintf("job-%d-%d", j.ID, j.CreatedAt.UnixMicro())
}

// Decode unmarshals the payload into v.
func (j *Job) Decode(v any) error {
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return fmt.Errorf("decode payload of job %d: %w", j.ID, err)
	}
	return nil
}

// SetResult stores s as the job's result when it succeeds.
func (j *Job) SetResult(s string) { j.result = &s }

// SetHTTPStatus records the HTTP status the handler's call answered with,
// which the job's attempt history and its span keep. The webhook handler
// sets it.
func (j *Job) SetHTTPStatus(code int) { j.httpStatus = code }

// SetExitCode records the exit code of the process the handler ran, which
// the job's attempt history and its span keep. The command handler sets it.
func (j *Job) SetExitCode(code int) { j.exitCode = &code }

// Progress reports how far this attempt is: done of total (0 when the
// total is unknown) and a short message, cut to
// sluicetype.MaxProgressMessageLen bytes. It never blocks: the worker
// writes the latest report at most once a second (worker.ProgressEvery),
// and the last one when the handler returns, on the job's row, where
// jobs show, the API and the dashboard read it, and on the attempt's
// history entry. Call it as often as is convenient. A job run outside a
// worker (a test calling the handler) ignores it.
func (j *Job) Progress(done, total int64, message string) {
	if j.progress != nil {
		j.progress(done, total, message)
	}
}

// ProgressToken is the token a webhook receiver reports this attempt's
// progress with (POST /v1/jobs/{id}/progress, docs/http-api.md); the
// webhook handler sends it. "" for a job run outside a worker.
func (j *Job) ProgressToken() string {
	if j.lease == "" {
		return ""
	}
	j.progressShared = true
	return sluicetype.ProgressToken(j.lease, j.ID)
}

// SetLog stores what this attempt wrote, kept as its attempt's log
// whatever the outcome (Client.AttemptLogs reads it), unless the attempt
// lost its lease. text is what was kept of bytes written in all, omitted
// of them left out; the store keeps at most sluicetype.MaxLogLen bytes of
// it, with invalid UTF-8 and NUL bytes replaced. The command handler sets
// it from the command's output; a Go handler may set it too.
func (j *Job) SetLog(text string, bytes, omitted int64) {
	j.log = &sluicetype.AttemptLog{Text: text, Bytes: bytes, Omitted: omitted}
}

// Logger returns the attempt's logger: what a handler logs through it
// goes to the Client's logger, with the job's id, type and attempt, and is
// kept as the attempt's log (jobs show --logs, the dashboard's attempt
// timeline), its first and last bytes as a command's output is, whatever
// the outcome. A handler that calls SetLog sets the attempt's log itself,
// and what the logger wrote is not kept. Its records at Info and above
// are kept; the Client's logger applies its own level. Safe for
// concurrent use; every call returns the same logger.
func (j *Job) Logger() *slog.Logger {
	j.loggerOnce.Do(func() {
		base := j.base
		if base == nil {
			base = slog.Default() // a job run outside a Client: a test calling its handler
		}
		j.logBuf = attemptlog.New()
		// The process's log needs to say which job a line is about; the
		// attempt's own log does not.
		withJob := base.Handler().WithAttrs([]slog.Attr{
			slog.Int64("job_id", j.ID), slog.String("type", j.Type), slog.Int("attempt", j.Attempt)})
		j.logger = slog.New(slog.NewMultiHandler(withJob, slog.NewTextHandler(j.logBuf, nil)))
	})
	return j.logger
}

// keepLoggerOutput makes what Logger wrote the attempt's log, unless the
// handler set one with SetLog.
func (j *Job) keepLoggerOutput() {
	if j.log != nil || j.logBuf == nil {
		return
	}
	if text, total, omitted := j.logBuf.Log(); total > 0 {
		j.SetLog(text, total, omitted)
	}
}

// AttemptLog returns what SetLog stored, if anything; its JobID and
// Attempt are filled in when it is written.
func (j *Job) AttemptLog() (sluicetype.AttemptLog, bool) {
	if j.log == nil {
		return sluicetype.AttemptLog{}, false
	}
	return *j.log, true
}

// Result returns what SetResult stored, if anything.
func (j *Job) Result() (string, bool) {
	if j.result == nil {
		return "", false
	}
	return *j.result, true
}

// Tx returns the completing transaction, opened on first use. A handler
// that writes through it makes those writes and the job's success commit
// together, or not at all: if the handler fails, or the job's lease was
// lost, the transaction is rolled back. sluice commits it; the handler must
// not. On SQLite it holds the single writer connection while the handler
// runs, so keep such handlers short there.
func (j *Job) Tx(ctx context.Context) (*sql.Tx, error) {
	if j.tx != nil {
		return j.tx, nil
	}
	if j.db == nil {
		return nil, errors.New("job has no database: transactional completion is only for jobs run by a sluice Client")
	}
	// The transaction must outlive the handler's context, which ends when
	// the handler returns: sluice commits it afterwards with the fenced
	// success update. Statements inside still use the handler's context.
	tx, err := j.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("begin completing transaction of job %d: %w", j.ID, err)
	}
	j.tx = tx
	return tx, nil
}

// Handler runs jobs of one type.
type Handler interface {
	Work(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) error

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, job *Job) error { return f(ctx, job) }
