package maintenance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// These tests run two services on one real SQLite database. Leadership
// follows the database clock; when the chores run follows a manual clock
// that only the test moves.

// leaderTTL is short so that a hand-over takes seconds; the services
// renew every third of it. The bounds below are fractions of it, and 2 s
// leaves each a renewal late by a second or more, as a loaded machine
// under -race can make one.
const leaderTTL = 2 * time.Second

// node is one service's view of the shared database: every call goes to
// the real driver, rescues are counted, and cut makes the database
// unreachable for this node alone.
type node struct {
	driver.Driver
	rescues atomic.Int32
	sweeps  atomic.Int32
	cut     atomic.Bool
}

var errCut = errors.New("test: database unreachable from this node")

func (n *node) Rescue(ctx context.Context, p driver.RescueParams) (sluicetype.RescueResult, error) {
	if n.cut.Load() {
		return sluicetype.RescueResult{}, errCut
	}
	n.rescues.Add(1)
	return n.Driver.Rescue(ctx, p)
}

func (n *node) SweepDeadlines(ctx context.Context, p driver.SweepDeadlinesParams) (int64, error) {
	n.sweeps.Add(1)
	return n.Driver.SweepDeadlines(ctx, p)
}

func (n *node) AcquireLease(ctx context.Context, p driver.LeaseParams) (sluicetype.LeaseState, error) {
	if n.cut.Load() {
		return sluicetype.LeaseState{}, errCut
	}
	return n.Driver.AcquireLease(ctx, p)
}

// start runs a service for node id on d.
func start(t *testing.T, d driver.Driver, id string, clk *clock.Manual, rescued func(sluicetype.RescueResult)) (*Service, *node) {
	t.Helper()
	n := &node{Driver: d}
	s := New(Config{Driver: n, NodeID: id, Clock: clk.Clock(), LeaderTTL: leaderTTL, RescueEvery: time.Minute, Rescued: rescued})
	s.Start(context.Background())
	t.Cleanup(s.Stop)
	return s, n
}

func newClock() *clock.Manual { return clock.NewManual(time.Date(2031, 5, 4, 12, 0, 0, 0, time.UTC)) }

// leaderLease reads the leadership row.
func leaderLease(t *testing.T, d driver.Driver) sluicetype.LeaseState {
	t.Helper()
	ls, err := d.ListLeases(context.Background())
	require.NoError(t, err)
	for _, l := range ls {
		if l.Name == LeaderLease {
			return l
		}
	}
	t.Fatal("no leadership row")
	return sluicetype.LeaseState{}
}

// eventually polls cond every few milliseconds until it holds, and fails
// the test with msg after within.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Of two services on one database exactly one leads, and only it rescues;
// it keeps leading while it renews, and once it stops, having released the
// lease, the other takes over within its TTL.
func TestOneLeaderAndHandOverAtStop(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	clk := newClock()
	a, na := start(t, d, "node-a", clk, nil)
	eventually(t, 20*time.Second, a.IsLeader, "the first service never led")
	b, nb := start(t, d, "node-b", clk, nil)

	// Longer than a TTL: the leader renews every third of it, so its
	// lease never runs low, and the other never gets it.
	fence := leaderLease(t, d).Fence
	for end := time.Now().Add(leaderTTL + leaderTTL/3); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		require.True(t, a.IsLeader(), "the leader stepped down")
		require.False(t, b.IsLeader(), "two leaders")
		now, err := d.Now(context.Background())
		require.NoError(t, err)
		require.Greater(t, leaderLease(t, d).Until.Sub(now), leaderTTL/6, "the leader let its lease run low")
	}
	l := leaderLease(t, d)
	require.Equal(t, "node-a", l.Holder)
	require.Equal(t, fence, l.Fence, "leadership changed hands")
	// Rescue is every node's: each first pass rescues, the next one a
	// RescueEvery later.
	require.EqualValues(t, 1, na.rescues.Load())
	require.EqualValues(t, 1, nb.rescues.Load())

	a.Stop()
	require.Empty(t, leaderLease(t, d).Holder, "Stop kept the lease")
	require.False(t, a.IsLeader(), "a stopped service still says it leads")
	eventually(t, leaderTTL, b.IsLeader, "the other service did not take over within the TTL")
	l = leaderLease(t, d)
	require.Equal(t, "node-b", l.Holder)
	require.Greater(t, l.Fence, fence, "a new holder gets a higher fence")
	clk.Advance(time.Minute)
	eventually(t, 20*time.Second, func() bool { return nb.rescues.Load() == 2 }, "the new leader did not rescue")
	require.EqualValues(t, 1, na.rescues.Load(), "a stopped service rescued")
}

// Item 8 of issue 35: a node that does not lead rescues too, so that the
// jobs of a dead worker that also led maintenance come back within one
// lease plus one rescue interval, not after its leadership expires. Here
// the dead leader's lease runs an hour; before, nothing was rescued until
// it passed.
func TestFollowerRescuesWhileDeadLeaderHoldsLease(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	clk := newClock()
	na := &node{Driver: d}
	a := New(Config{Driver: na, NodeID: "node-a", Clock: clk.Clock(), LeaderTTL: time.Hour, RescueEvery: time.Minute})
	a.Start(ctx)
	t.Cleanup(a.Stop)
	eventually(t, 20*time.Second, a.IsLeader, "the first service never led")
	na.cut.Store(true) // dead: it renews nothing and releases nothing

	_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 3}}})
	require.NoError(t, err)
	jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "q", Limit: 1, Lease: time.Millisecond, Token: "dead-worker"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)

	var rescued atomic.Int32
	b, _ := start(t, d, "node-b", clk, func(r sluicetype.RescueResult) { rescued.Add(int32(r.Pending)) })
	eventually(t, 10*time.Second, func() bool {
		if rescued.Load() == 1 {
			return true
		}
		clk.Advance(time.Minute) // the next pass is due
		return false
	}, "the follower did not rescue while the dead leader's lease held")
	require.False(t, b.IsLeader(), "the follower took over an unexpired leadership")
	require.Equal(t, "node-a", leaderLease(t, d).Holder)
	j, err := d.GetJob(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, sluicetype.StatusPending, j.Status)
}

// A leader cut off from the database steps down, and the other service
// takes over once the lease it can no longer renew has expired, not before.
func TestTakeOverAfterLeaderIsCutOff(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	clk := newClock()
	a, na := start(t, d, "node-a", clk, nil)
	eventually(t, 20*time.Second, a.IsLeader, "the first service never led")
	b, _ := start(t, d, "node-b", clk, nil)

	na.cut.Store(true)
	cutAt := time.Now()
	expires := leaderLease(t, d).Until
	// The lease runs out at most a TTL after the cut (the leader may have
	// renewed once more just as it was cut off); the other service tries
	// every third of a TTL.
	eventually(t, 2*leaderTTL, b.IsLeader, "the other service did not take over after the TTL")
	require.Less(t, time.Since(cutAt), 2*leaderTTL)
	require.False(t, a.IsLeader(), "the cut-off leader still thinks it leads")
	l := leaderLease(t, d)
	require.Equal(t, "node-b", l.Holder)
	require.False(t, l.Since.Before(expires), "taken over at %v, before the old lease expired at %v", l.Since, expires)
}

// Rescue runs on the leader's first pass and then every RescueEvery of its
// clock, and returns the jobs whose lease expired.
func TestLeaderRescuesEveryRescueEvery(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	_, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "q", Type: "t", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 3}}})
	require.NoError(t, err)
	clk := newClock()
	var rescued atomic.Int32
	a, na := start(t, d, "node-a", clk, func(r sluicetype.RescueResult) { rescued.Add(int32(r.Pending)) })
	eventually(t, 20*time.Second, func() bool { return na.rescues.Load() == 1 }, "the leader's first pass did not rescue")
	require.True(t, a.IsLeader())

	jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "q", Limit: 1, Lease: time.Millisecond, Token: "stalled-worker"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	time.Sleep(leaderTTL) // three passes, the job's lease long expired
	require.EqualValues(t, 1, na.rescues.Load(), "rescued before RescueEvery passed on the service's clock")
	require.Zero(t, rescued.Load())

	clk.Advance(time.Minute)
	eventually(t, 20*time.Second, func() bool { return rescued.Load() == 1 }, "the expired lease was not rescued")
	require.EqualValues(t, 2, na.rescues.Load())
	j, err := d.GetJob(ctx, jobs[0].ID)
	require.NoError(t, err)
	require.Equal(t, sluicetype.StatusPending, j.Status)
}

// The leader cancels the pending jobs past their deadline with its
// rescue; a node that does not lead rescues but does not sweep.
func TestLeaderSweepsDeadlines(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	now, err := d.Now(ctx)
	require.NoError(t, err)
	res, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "default", Type: "t", Dedupe: "permanent",
		Payload: []byte(`{}`), MaxAttempts: 5, RunAt: now.Add(-time.Hour), Deadline: now.Add(-time.Minute)}}})
	require.NoError(t, err)
	clk := newClock()
	a, na := start(t, d, "node-a", clk, nil)
	eventually(t, 20*time.Second, a.IsLeader, "the first service never led")
	eventually(t, 20*time.Second, func() bool {
		j, err := d.GetJob(ctx, res[0].ID)
		require.NoError(t, err)
		return j.Status == sluicetype.StatusCancelled
	}, "the leader did not cancel the job past its deadline")
	require.Positive(t, na.sweeps.Load())

	_, nb := start(t, d, "node-b", clk, nil)
	eventually(t, 20*time.Second, func() bool { return nb.rescues.Load() >= 1 }, "the follower did not rescue")
	require.Zero(t, nb.sweeps.Load(), "a follower swept")
}
