package sluice

import (
	"context"
	"crypto/subtle"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// ReportProgress writes a progress report of job id's running attempt on
// behalf of a handler outside this process (a webhook receiver), which
// proves the attempt with its progress token (sluicetype.ProgressToken).
// It refuses what CheckProgress refuses, and a report whose attempt ended
// since the check (sluicetype.ErrWrongState). It writes at once: callers
// that take reports from outside coalesce them (the server does).
func (c *Client) ReportProgress(ctx context.Context, id int64, token string, done, total int64, message string) error {
	lease, err := c.checkProgress(ctx, id, token, done, total)
	if err != nil {
		return err
	}
	// Fenced by the lease token read above: an attempt that ended since
	// is refused like a stale one.
	held, err := c.drv.Progress(ctx, driver.ProgressParams{ID: id, Token: lease, Done: done, Total: total, Message: message})
	if err != nil {
		return err
	}
	if !held {
		return sluicetype.ErrWrongState
	}
	return nil
}

// CheckProgress checks a report as ReportProgress would, without writing
// it: done and total must not be negative (an *InputError naming the
// field), and token must be the progress token of job id's running
// attempt. A token of another attempt, an earlier one included, and a
// job no longer running are both sluicetype.ErrWrongState, told apart by
// no one, so that the answer reveals nothing of a job to a caller without
// its token.
func (c *Client) CheckProgress(ctx context.Context, id int64, token string, done, total int64) error {
	_, err := c.checkProgress(ctx, id, token, done, total)
	return err
}

// checkProgress is CheckProgress, returning the attempt's lease token.
func (c *Client) checkProgress(ctx context.Context, id int64, token string, done, total int64) (string, error) {
	switch {
	case done < 0:
		return "", inputErr("done", "must not be negative, got %d", done)
	case total < 0:
		return "", inputErr("total", "must not be negative, got %d", total)
	}
	j, err := c.drv.GetJob(ctx, id)
	if err != nil {
		return "", err
	}
	if j.Status != sluicetype.StatusProcessing || j.LockedBy == "" ||
		subtle.ConstantTimeCompare([]byte(sluicetype.ProgressToken(j.LockedBy, id)), []byte(token)) != 1 {
		return "", sluicetype.ErrWrongState
	}
	return j.LockedBy, nil
}
