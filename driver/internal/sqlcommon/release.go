package sqlcommon

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
