package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// lateCommitDriver cuts the first claim on the client, and commits it on
// the server only after the pool has handed it back: the order a claim cut
// by a timeout or by the reach guard can take on PostgreSQL (the statement
// runs until the cancel request lands) or MySQL (a COMMIT in flight).
type lateCommitDriver struct {
	*countingDriver
	mu       sync.Mutex
	cut      *driver.ClaimParams // the first claim, failed on the client
	late     []int64             // what it took once committed
	lateErr  error               // why it took nothing
	lateDone chan struct{}       // closed once it ran
}

func newLateCommitDriver(t *testing.T) *lateCommitDriver {
	return &lateCommitDriver{countingDriver: openSQLite(t), lateDone: make(chan struct{})}
}

func (d *lateCommitDriver) Claim(ctx context.Context, p driver.ClaimParams) ([]sluicetype.JobRow, error) {
	d.mu.Lock()
	first := d.cut == nil
	if first {
		d.cut = &p
	}
	d.mu.Unlock()
	if first {
		return nil, errors.New("claim q: read tcp 127.0.0.1:5432: i/o timeout")
	}
	return d.countingDriver.Claim(ctx, p)
}

// ReleaseClaim hands back as asked; after the first hand-back of the cut
// claim, the cut claim commits.
func (d *lateCommitDriver) ReleaseClaim(ctx context.Context, p driver.ReleaseClaimParams) (int64, error) {
	n, err := d.countingDriver.ReleaseClaim(ctx, p)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut != nil && p.Token == d.cut.Token && err == nil {
		select {
		case <-d.lateDone:
		default:
			jobs, cerr := d.countingDriver.Driver.Claim(ctx, *d.cut)
			for _, j := range jobs {
				d.late = append(d.late, j.ID)
			}
			d.lateErr = cerr
			close(d.lateDone)
		}
	}
	return n, err
}

// lateIDs waits for the cut claim's late commit and returns what it took.
func (d *lateCommitDriver) lateIDs(t *testing.T) []int64 {
	t.Helper()
	waitClosed(t, d.lateDone, "the cut claim never committed")
	d.mu.Lock()
	defer d.mu.Unlock()
	require.NoError(t, d.lateErr)
	require.NotEmpty(t, d.late, "the cut claim took no job")
	return d.late
}

// A claim that failed on the client and committed after its hand-back
// does not leave its jobs processing, charged, until their lease expires:
// the pool hands it back again, and they run with their first attempt.
func TestLateCommittedClaimIsHandedBackAgain(t *testing.T) {
	d := newLateCommitDriver(t)
	ids := enqueue(t, d, 3)
	var mu sync.Mutex
	ran := map[int64]int{}
	// The lease is the hour the jobs would otherwise wait.
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 2, Lease: time.Hour}, func(ctx context.Context, j sluicetype.JobRow) Result {
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		return Result{Status: sluicetype.StatusSuccess}
	}, Hooks{})
	late := d.lateIDs(t)
	eventually(t, 30*time.Second, func() bool { return count(t, d, sluicetype.StatusSuccess) == len(ids) },
		"the jobs of the late claim %v stayed behind", late)
	for _, id := range ids {
		j := job(t, d, id)
		require.Equal(t, 1, j.Attempts, "job %d: the late claim's attempt was charged", id)
		require.Empty(t, j.History, "job %d", id)
		require.Equal(t, 1, ran[id], "job %d", id)
	}
}

// At shutdown the pool hands a failed claim back once more after the last
// outcomes are written, whatever checks are still to come.
func TestLateCommittedClaimIsHandedBackAtShutdown(t *testing.T) {
	d := newLateCommitDriver(t)
	ids := enqueue(t, d, 3)
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 2, Lease: time.Hour}, func(ctx context.Context, j sluicetype.JobRow) Result {
		return Result{Status: sluicetype.StatusSuccess}
	}, Hooks{}, func(p *Pool) { p.lateChecks = []time.Duration{time.Hour} })
	// The cut claim took every job (its limit is the 4 slots), so none
	// ran: each is back, uncharged, once Stop returns.
	require.ElementsMatch(t, ids, d.lateIDs(t))
	p.stop(time.Second)
	for _, id := range ids {
		j := job(t, d, id)
		require.Equal(t, sluicetype.StatusPending, j.Status, "job %d", id)
		require.Zero(t, j.Attempts, "job %d", id)
		require.Empty(t, j.LockedBy, "job %d", id)
	}
}
