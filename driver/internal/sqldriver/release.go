package sqldriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/driver"
)

// ReleaseClaim hands back the jobs still processing under p.Token, with
// their attempt refunded.
func (b *Base) ReleaseClaim(ctx context.Context, p driver.ReleaseClaimParams) (int64, error) {
	if p.Token == "" {
		return 0, errors.New("release claim: token: must not be empty")
	}
	n, err := b.ExecCount(ctx, b.Q.ReleaseClaim, p.Token)
	if err != nil {
		return 0, fmt.Errorf("release claim %s: %w", p.Token, err)
	}
	return n, nil
}

// Prefetched marks the jobs p.IDs held under p.Token as not started.
func (b *Base) Prefetched(ctx context.Context, p driver.PrefetchedParams) error {
	if p.Token == "" {
		return errors.New("prefetched: token: must not be empty")
	}
	if len(p.IDs) == 0 {
		return nil
	}
	args := make([]any, 0, 1+len(p.IDs))
	args = append(args, p.Token)
	for _, id := range p.IDs {
		args = append(args, id)
	}
	if _, err := b.ExecCount(ctx, b.InList(b.Q.MarkPrefetched, 2, len(p.IDs)), args...); err != nil {
		return fmt.Errorf("mark %d prefetched jobs of %s: %w", len(p.IDs), p.Token, err)
	}
	return nil
}

// Started records that prefetched job p.ID begins its run under p.Token,
// and reports whether the lease is still held. A job whose deadline passed
// while it waited is cancelled instead, and reported as not held.
func (b *Base) Started(ctx context.Context, p driver.StartedParams) (bool, error) {
	if p.Token == "" {
		return false, errors.New("started: token: must not be empty")
	}
	n, err := b.ExecCount(ctx, b.Q.StartPrefetched, p.ID, p.Token)
	if err != nil {
		return false, fmt.Errorf("start prefetched job %d: %w", p.ID, err)
	}
	if n == 1 {
		return true, nil
	}
	keep := driver.KeepAttempts(0)
	if _, err := b.ExecCount(ctx, b.Q.DropLatePrefetched, keep, keep, p.ID, p.Token); err != nil {
		return false, fmt.Errorf("cancel prefetched job %d past its deadline: %w", p.ID, err)
	}
	return false, nil
}
