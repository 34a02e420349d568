package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// These tests run two schedulers on one real SQLite database, as two nodes
// would. The scheduler reads only the database clock, so instead of moving
// a clock they start a schedule a few seconds back: its missed slots are
// due at once, and each test decides how the two nodes' passes interleave.

const name = "tick"

// entry fires every second.
func entry(t *testing.T, overlap string) Entry {
	t.Helper()
	s, err := cron.Parse("@every 1s", nil)
	require.NoError(t, err)
	return Entry{Name: name, Spec: s, Overlap: overlap}
}

// startBack records the schedule as handled up to 3.5s ago, with lastJob as
// the job of its last fired slot (0: none), and returns its state.
func startBack(t *testing.T, d driver.Driver, lastJob int64) sluicetype.ScheduleState {
	t.Helper()
	ctx := context.Background()
	now, err := d.Now(ctx)
	require.NoError(t, err)
	require.NoError(t, d.InitSchedule(ctx, driver.InitScheduleParams{Name: name, Last: now.Add(-3500 * time.Millisecond)}))
	if lastJob > 0 {
		st, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
		require.NoError(t, err)
		ok, err := d.AdvanceSchedule(ctx, driver.AdvanceScheduleParams{Name: name, Version: st.Version, LastSlot: st.LastSlot, LastJobID: lastJob})
		require.NoError(t, err)
		require.True(t, ok)
	}
	st, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	return st
}

// insert enqueues a slot's job under its key, as the client does.
func insert(ctx context.Context, d driver.Driver, key string) (int64, bool, error) {
	res, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "q", Type: name, Key: key, Dedupe: sluicetype.DedupePermanent,
		Payload: []byte(`{}`), MaxAttempts: 1}}})

	if err != nil {
		return 0, false, err
	}
	return res[0].ID, res[0].Duplicate, nil
}

// node is one scheduler and what its hooks saw.
type node struct {
	*Scheduler
	fired, skipped atomic.Int32
}

func newNode(d driver.Driver, e Entry, enqueue EnqueueFunc) *node {
	n := &node{}
	if enqueue == nil {
		enqueue = func(ctx context.Context, _ Entry, key string) (int64, bool, error) { return insert(ctx, d, key) }
	}
	n.Scheduler = New(Config{Driver: d, Entries: []Entry{e}, Enqueue: enqueue, Hooks: Hooks{
		Fired:   func(string) { n.fired.Add(1) },
		Skipped: func(string) { n.skipped.Add(1) },
	}})
	return n
}

// pauseAt returns a hook that, on its nth call, signals paused and waits
// for resume.
func pauseAt(n int32, paused chan<- struct{}, resume <-chan struct{}) func() {
	var calls atomic.Int32
	return func() {
		if calls.Add(1) == n {
			close(paused)
			<-resume
		}
	}
}

// waitPaused waits for a node's pass to stall, and fails if it ends first.
func waitPaused(t *testing.T, paused <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("node A's pass ended (err %v) before its second slot", err)
	case <-time.After(2 * time.Second):
		t.Fatal("node A never reached its second slot")
	}
}

// slotJobs returns the keys of the schedule's jobs, each with how many
// jobs carry it.
func slotJobs(t *testing.T, d driver.Driver) map[string]int {
	t.Helper()
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{KeyPrefix: "sched:" + name + ":", Limit: 1000})
	require.NoError(t, err)
	keys := map[string]int{}
	for _, j := range jobs {
		keys[j.Key]++
	}
	return keys
}

// requireSlots checks the schedule's jobs against its slots and returns
// their keys: every slot after from up to recorded (the schedule's last
// slot) has a job, and every job is for a slot of the spec after from and
// not after now (a pass that lost the compare-and-set may have fired a
// slot past the recorded one; the next pass records it). The unique key
// makes a second job under one slot's key impossible; what a race could
// still do is fire a slot under another key, or skip one, and the set
// catches that.
func requireSlots(t *testing.T, d driver.Driver, e Entry, from, recorded time.Time) []string {
	t.Helper()
	now, err := d.Now(context.Background())
	require.NoError(t, err)
	valid := map[string]bool{}
	var want []string
	for s := e.Spec.Next(from); !s.At.After(now); s = e.Spec.Next(s.At) {
		key := "sched:" + name + ":" + s.Key
		valid[key] = true
		if !s.At.After(recorded) {
			want = append(want, key)
		}
	}
	var got []string
	for k := range slotJobs(t, d) {
		require.True(t, valid[k], "job %s is not a slot after %s and up to now (%s)", k, from, now)
		got = append(got, k)
	}
	require.Subset(t, got, want, "every slot after %s up to the recorded %s has a job", from, recorded)
	return got
}

// Node A fires the first due slot and stalls; node B, which read the same
// version, handles every due slot and wins the compare-and-set; A then
// finds the rest taken and loses it. Each slot has one job, counted once,
// and the schedule advanced once.
func TestSchedulersRacingForSlotsFireEachOnce(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	st := startBack(t, d, 0)
	e := entry(t, OverlapAllow)
	paused, resume := make(chan struct{}), make(chan struct{})
	stall := pauseAt(2, paused, resume)
	a := newNode(d, e, func(ctx context.Context, _ Entry, key string) (int64, bool, error) {
		stall()
		return insert(ctx, d, key)
	})
	b := newNode(d, e, nil)

	ctx := context.Background()
	aDone := make(chan error, 1)
	go func() { _, err := a.Pass(ctx); aDone <- err }()
	waitPaused(t, paused, aDone)
	_, err := b.Pass(ctx)
	require.NoError(t, err)
	afterB, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	close(resume)
	require.NoError(t, <-aDone)

	got, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	keys := requireSlots(t, d, e, st.LastSlot, got.LastSlot)
	require.GreaterOrEqual(t, len(keys), 3, "slots due in 3.5s of a schedule of every second")
	require.EqualValues(t, 1, a.fired.Load(), "node A created one slot's job")
	require.EqualValues(t, len(keys)-1, b.fired.Load(), "node B created the others")
	require.EqualValues(t, len(keys), got.Fires, "fires counted")
	require.Equal(t, st.Version+1, got.Version, "the schedule advanced more than once")
	require.True(t, got.LastSlot.Equal(afterB.LastSlot), "the losing node moved the schedule from %v to %v", afterB.LastSlot, got.LastSlot)
	require.Equal(t, afterB.LastJobID, got.LastJobID)
}

// Many passes of two nodes at once: however they interleave, every slot
// gets one job and the fires count the jobs.
func TestConcurrentPassesCountEachFireOnce(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	start := startBack(t, d, 0)
	e := entry(t, OverlapAllow)
	nodes := []*node{newNode(d, e, nil), newNode(d, e, nil)}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = nodes[i%2].Pass(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	st, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	keys := requireSlots(t, d, e, start.LastSlot, st.LastSlot)
	require.GreaterOrEqual(t, len(keys), 3)
	require.EqualValues(t, len(keys), st.Fires, "fires counted")
	require.EqualValues(t, len(keys), nodes[0].fired.Load()+nodes[1].fired.Load(), "fired hooks")
}

// activeStall is the driver of a node whose check of the previous run
// stalls on the nth call.
type activeStall struct {
	driver.Driver
	stall func()
}

func (d activeStall) GetJob(ctx context.Context, id int64) (*sluicetype.JobRow, error) {
	d.stall()
	return d.Driver.GetJob(ctx, id)
}

// Under the forbid policy both nodes skip the slots that fall due while
// the previous run is pending, but only the node that wins the
// compare-and-set counts them.
func TestSchedulersRacingToSkipCountSkipsOnce(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	prev, _, err := insert(context.Background(), d, "previous-run")
	require.NoError(t, err)
	st := startBack(t, d, prev)
	e := entry(t, OverlapForbid)
	paused, resume := make(chan struct{}), make(chan struct{})
	a := newNode(activeStall{Driver: d, stall: pauseAt(2, paused, resume)}, e, nil)
	b := newNode(d, e, nil)

	ctx := context.Background()
	aDone := make(chan error, 1)
	go func() { _, err := a.Pass(ctx); aDone <- err }()
	waitPaused(t, paused, aDone)
	_, err = b.Pass(ctx)
	require.NoError(t, err)
	close(resume)
	require.NoError(t, <-aDone)

	require.Empty(t, slotJobs(t, d), "a slot fired while the previous run was pending")
	got, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	require.GreaterOrEqual(t, b.skipped.Load(), int32(3))
	require.EqualValues(t, b.skipped.Load(), got.Skips, "skips counted: the winner's only")
	require.Zero(t, got.Fires)
	require.Equal(t, st.Version+1, got.Version)
	require.Equal(t, prev, got.LastJobID)
}

// A node that stops in the middle of a pass (its context cancelled, as at
// SIGTERM) right after its insert created a slot's job still records that
// slot, counted in the schedule's fires: the job exists, and no other node
// will count it (their inserts find the key taken). The slots after it are
// left due for the next pass.
func TestStoppedPassRecordsWhatItFired(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	st := startBack(t, d, 0)
	e := entry(t, OverlapAllow)
	ctx, stop := context.WithCancel(context.Background())
	calls := 0
	n := newNode(d, e, func(ctx context.Context, _ Entry, key string) (int64, bool, error) {
		calls++
		if calls == 2 {
			return 0, false, ctx.Err() // stopped before the second slot
		}
		id, dup, err := insert(ctx, d, key)
		stop() // the signal lands just after the first slot's insert
		return id, dup, err
	})
	_, err := n.Pass(ctx)
	require.ErrorIs(t, err, context.Canceled)

	got, err := d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	require.EqualValues(t, 1, got.Fires, "the slot whose job this node created is counted")
	require.Len(t, slotJobs(t, d), 1)
	first := e.Spec.Next(st.LastSlot).At
	require.True(t, got.LastSlot.Equal(first), "recorded up to the slot handled (%s), not %s", first, got.LastSlot)
	require.Equal(t, st.Version+1, got.Version)

	// The next pass, on a running node, fires the rest, each counted once.
	_, err = newNode(d, e, nil).Pass(context.Background())
	require.NoError(t, err)
	got, err = d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: name})
	require.NoError(t, err)
	keys := requireSlots(t, d, e, st.LastSlot, got.LastSlot)
	require.EqualValues(t, len(keys), got.Fires)
}
