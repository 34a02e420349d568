package sluice

import (
	"context"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// AttemptLogs reads the logs kept of job id's attempts (Job.SetLog; a
// command's output), in attempt order, or only that of attempt when it is
// positive. A job without logs, or a missing job, has none: an empty
// slice, not an error. Logs go when their job is deleted or purged.
func (c *Client) AttemptLogs(ctx context.Context, id int64, attempt int) ([]sluicetype.AttemptLog, error) {
	return c.drv.ReadAttemptLogs(ctx, driver.ReadAttemptLogsParams{JobID: id, Attempt: attempt})
}
