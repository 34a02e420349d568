package sluice

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/internal/worker"
	"github.com/sluicehq/sluice/sluicetype"
)

// NoHandlerDelay is how long a job claimed by a process with no handler
// for its type waits before it may be claimed again.
const NoHandlerDelay = 30 * time.Second

// run executes one claimed job with its type's handler and classifies the
// result as docs/design.md "Retries" describes.
func (c *Client) run(ctx context.Context, row sluicetype.JobRow) worker.Result {
	ctx, span := c.startRun(ctx, row)
	o := c.runTraced(ctx, row)
	o.TraceID = traceIDOf(ctx)
	endRun(span, o)
	return o
}

// runTraced runs the job inside its span.
func (c *Client) runTraced(ctx context.Context, row sluicetype.JobRow) worker.Result {
	t, ok := c.cfg.Types[row.Type]
	if !ok || t.Handler == nil {
		// Workers and passes claim only the types they have handlers for
		// (handledTypes), so no claim lands here; were one to, the job is
		// given back uncharged rather than burning its attempts.
		c.log.Warn("claimed a job of a type this process has no handler for; given back", "job_id", row.ID, "type", row.Type)
		msg := fmt.Sprintf("no handler for job type %q in this process (%s); waiting %s for one", row.Type, c.cfg.NodeID, NoHandlerDelay)
		return worker.Result{Status: sluicetype.StatusPending, Refund: true, Delay: NoHandlerDelay, Error: &msg}
	}
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	job := &Job{ID: row.ID, Queue: row.Queue, Type: row.Type, Key: row.Key, Payload: row.Payload,
		Priority: row.Priority, Attempt: row.Attempts, MaxAttempts: row.MaxAttempts, CreatedAt: row.CreatedAt,
		Partition: row.Partition, db: c.drv.DB(), progress: worker.Report(ctx), lease: row.LockedBy, base: c.log}
	err := callHandler(ctx, t.Handler, job)
	job.keepLoggerOutput()
	if err == nil && ctx.Err() == context.DeadlineExceeded && t.Timeout > 0 {
		err = fmt.Errorf("timed out after %s", t.Timeout)
	} else if err != nil && errors.Is(err, context.DeadlineExceeded) && t.Timeout > 0 {
		err = fmt.Errorf("timed out after %s: %w", t.Timeout, err)
	}
	var o worker.Result
	if err == nil {
		o = worker.Result{Status: sluicetype.StatusSuccess, Result: job.result, Tx: job.tx}
	} else {
		if job.tx != nil {
			job.tx.Rollback()
		}
		o = c.failure(row, t, err)
	}
	o.HTTPStatus, o.ExitCode, o.Log, o.ProgressElsewhere = job.httpStatus, job.exitCode, job.log, job.progressShared
	return o
}

// callHandler runs the handler, turning a panic into an error with its stack.
func callHandler(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return h.Work(ctx, job)
}

// failure classifies a handler error into the job's next state.
func (c *Client) failure(row sluicetype.JobRow, t Type, err error) worker.Result {
	msg := err.Error()
	var snooze *snoozeError
	if errors.As(err, &snooze) {
		return worker.Result{Status: sluicetype.StatusPending, Delay: snooze.d, Refund: true}
	}
	summary := summaryOf(err)
	if IsPermanent(err) {
		return worker.Result{Status: sluicetype.StatusFailed, Error: &msg, Summary: summary}
	}
	if row.Attempts >= row.MaxAttempts {
		return worker.Result{Status: sluicetype.StatusFailed, Error: &msg, Summary: summary, Transient: true}
	}
	b := t.Backoff
	delay := b.Delay(row.Attempts)
	var ra *retryAfterError
	if errors.As(err, &ra) {
		delay = min(ra.d, b.Max)
	}
	return worker.Result{Status: sluicetype.StatusPending, Delay: delay, Error: &msg, Summary: summary, Transient: true}
}
