package sluice

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/maintenance"
	"github.com/sluicehq/sluice/sluicetype"
)

// Job reads one job with its attempt history; a missing one is
// sluicetype.ErrNotFound.
func (c *Client) Job(ctx context.Context, id int64) (*sluicetype.JobRow, error) {
	return c.drv.GetJob(ctx, id)
}

// Jobs lists jobs newest first, without their attempt history. Pass the
// last id of a page as AfterID to read the next one.
func (c *Client) Jobs(ctx context.Context, p sluicetype.ListParams) ([]sluicetype.JobRow, error) {
	if err := checkList(p); err != nil {
		return nil, err
	}
	return c.drv.ListJobs(ctx, p)
}

func checkList(p sluicetype.ListParams) error {
	if p.Status != "" && !p.Status.Valid() {
		return inputErr("status", "%q: want pending, processing, success, failed or cancelled", p.Status)
	}
	if p.PayloadField != "" && !sluicetype.ValidPayloadField(p.PayloadField) {
		return inputErr("payload_field", "%q: want a dotted path of names made of letters, digits and underscores, such as customer.id", p.PayloadField)
	}
	if p.PayloadField == "" && p.PayloadValue != "" {
		return inputErr("payload_field", "missing: a payload value needs the field it is compared with")
	}
	return nil
}

// CountBulk counts the jobs matching the filter that the bulk action
// (sluicetype.BulkRetry, BulkCancel, BulkDelete) would change, up to
// sluicetype.MaxBulk; pass the result's UpTo to Bulk so that it changes only
// those counted.
func (c *Client) CountBulk(ctx context.Context, action string, filter sluicetype.ListParams) (sluicetype.BulkCount, error) {
	if err := checkBulk(action, filter); err != nil {
		return sluicetype.BulkCount{}, err
	}
	return c.drv.CountBulk(ctx, driver.BulkParams{Action: action, Filter: filter})
}

// Bulk applies the action to the jobs matching the filter with an id at
// or below upTo (0: any), at most sluicetype.MaxBulk of them, and returns how
// many changed. Bulk cancels are not counted in the metrics and roll-ups
// of cancelled jobs, unlike Cancel.
func (c *Client) Bulk(ctx context.Context, action string, filter sluicetype.ListParams, upTo int64) (int64, error) {
	if err := checkBulk(action, filter); err != nil {
		return 0, err
	}
	n, err := c.drv.Bulk(ctx, driver.BulkParams{Action: action, Filter: filter, UpTo: upTo})
	if err == nil || n > 0 {
		// A bulk action that failed part way changed n jobs: that is
		// recorded too.
		c.audit(ctx, "jobs."+action, filterTarget(filter, upTo), n)
	}
	if n > 0 {
		c.log.Info("bulk action", "action", action, "jobs", n, "status", filter.Status, "type", filter.Type,
			"queue", filter.Queue, "key_prefix", filter.KeyPrefix, "payload_field", filter.PayloadField)
	}
	return n, err
}

func checkBulk(action string, filter sluicetype.ListParams) error {
	if _, ok := sluicetype.BulkStatuses[action]; !ok {
		return inputErr("action", "%q: want retry, cancel or delete", action)
	}
	if filter.Tx != nil {
		return inputErr("tx", "a bulk action runs in chunks of its own transactions, not in the caller's")
	}
	return checkList(filter)
}

// Retry moves a failed or cancelled job back to pending with more attempts.
func (c *Client) Retry(ctx context.Context, id int64) error {
	n, err := c.drv.Retry(ctx, driver.RetryParams{ID: id})
	if err != nil {
		return err
	}
	c.audit(ctx, "job.retry", fmt.Sprintf("job %d", id), n)
	return nil
}

// RetryFailed moves every failed job (of jobType, if given) back to
// pending and returns how many moved.
func (c *Client) RetryFailed(ctx context.Context, jobType string) (int64, error) {
	n, err := c.drv.Retry(ctx, driver.RetryParams{AllFailed: true, Type: jobType})
	if err != nil {
		return n, err
	}
	target := "all failed jobs"
	if jobType != "" {
		target = "failed jobs of type " + jobType
	}
	c.audit(ctx, "failed.retry", target, n)
	return n, nil
}

// Cancel moves a pending, failed or running job to cancelled. A running
// job's attempt ends at once, fenced by its lease token like a completion:
// if the attempt's own outcome was written first, Cancel fails with
// ErrWrongState; once the cancel is written, the outcome the handler
// reports later is dropped. The process running the job stops its handler
// within a second (Config.CancelPoll; docs/guarantees.md): a Go handler's
// context ends with the cause ErrCancelled, a command gets SIGTERM and
// then SIGKILL after its kill grace, a webhook request is aborted. The
// attempt's history entry and the job's last_error say who cancelled it,
// when ctx carries an Actor.
func (c *Client) Cancel(ctx context.Context, id int64) error {
	reason := ErrCancelled.Error()
	if a, ok := actorOf(ctx); ok {
		reason = fmt.Sprintf("%s: %s via %s", reason, a.Name, a.Source)
		if a.Address != "" {
			reason += " from " + a.Address
		}
	}
	running, err := c.drv.Cancel(ctx, driver.CancelParams{ID: id, Reason: reason, KeepAttempts: c.cfg.KeepAttempts})
	if err != nil {
		return err
	}
	c.countCancel(ctx, id)
	target := fmt.Sprintf("job %d", id)
	if running {
		target += " (running)"
	}
	c.audit(ctx, "job.cancel", target, 1)
	return nil
}

// Purge deletes finished jobs in status older than olderThan, in chunks,
// and returns how many it deleted.
func (c *Client) Purge(ctx context.Context, status sluicetype.Status, olderThan time.Duration) (int64, error) {
	if !sluicetype.IsFinal(status) {
		return 0, inputErr("status", "%q: only success, failed or cancelled jobs can be purged", status)
	}
	n, err := maintenance.Purge(ctx, c.drv, c.log, status, olderThan)
	if err == nil || n > 0 {
		c.audit(ctx, "jobs.purge", fmt.Sprintf("status=%s older_than=%s", status, olderThan), n)
	}
	return n, err
}

// PauseQueue stops every worker of queue from claiming, within about a
// second, until ResumeQueue. Running jobs finish. A queue that nothing
// knows (see checkQueueKnown) is refused, with an *InputError.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, true)
}

// ResumeQueue lets a paused queue's workers claim again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.setPaused(ctx, queue, false)
}

func (c *Client) setPaused(ctx context.Context, queue string, paused bool) error {
	if err := checkName("queue", queue, sluicetype.MaxQueueLen); err != nil {
		return err
	}
	if err := c.checkQueueKnown(ctx, queue); err != nil {
		return err
	}
	if err := c.drv.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: queue, Paused: paused}); err != nil {
		return err
	}
	action := "queue.resume"
	if paused {
		action = "queue.pause"
	}
	c.audit(ctx, action, "queue "+queue, 1)
	return nil
}

// ValidateEnqueue validates one job as Enqueue would, without writing anything.
func (c *Client) ValidateEnqueue(p EnqueueParams) error {
	_, err := c.prepare(p)
	return err
}
