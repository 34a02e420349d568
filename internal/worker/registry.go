package worker

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// running is one attempt of a job between its claim and its written
// outcome. Attempts are told apart by their lease: a job this process
// re-claims after losing its lease is a new attempt, with a new token,
// while the stale one may still be winding down.
type running struct {
	job   sluicetype.JobRow
	lease time.Duration
	// lastBeat is when the last successful renewal of the lease began
	// (the claim, at first), on this process's clock: the database set
	// the lease later than that, so the lease runs at least until
	// lastBeat + lease.
	lastBeat time.Time
	claimed  time.Time // for the duration in job log lines
	cancel   context.CancelCauseFunc
	// done is closed when the attempt's goroutine returns: its handler
	// is no longer running.
	done chan struct{}
	// settled: the handler returned and its outcome is on the way to the
	// database. abandoned: shutdown gave up on the handler and requeued
	// the job. The registry's lock makes them exclusive, so a job is never
	// both requeued and written with its own outcome.
	settled, abandoned bool
	// reported is what the settled handler returned, for the count of
	// outcomes a cancel dropped.
	reported sluicetype.Outcome
	// watch is the attempt's progress watchdog (stuck.go).
	watch watch
}

// attempt is a registry key: one job under one lease token.
type attempt struct {
	id    int64
	token string
}

func (x *running) key() attempt { return attempt{x.job.ID, x.job.LockedBy} }

// registry tracks running attempts for the heartbeat and for shutdown.
// jobs holds the attempts whose lease this process still renews; live
// holds, by job id, every attempt whose goroutine has not returned, even
// one whose lease is lost, so that a re-claim can wait for it.
type registry struct {
	mu   sync.Mutex
	jobs map[attempt]*running
	live map[int64][]*running
	gone chan struct{} // closed, and replaced, when a job leaves
}

func newRegistry() *registry {
	return &registry{jobs: map[attempt]*running{}, live: map[int64][]*running{}, gone: make(chan struct{})}
}

// add registers x and returns the attempts of the same job that are still
// alive here: their lease was lost, but their goroutines have not returned.
func (r *registry) add(x *running) (stale []*running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stale = append(stale, r.live[x.job.ID]...)
	r.jobs[x.key()] = x
	r.live[x.job.ID] = append(r.live[x.job.ID], x)
	return stale
}

// ended records that x's goroutine returned.
func (r *registry) ended(x *running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.live[x.job.ID]
	for i, y := range l {
		if y == x {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(r.live, x.job.ID)
	} else {
		r.live[x.job.ID] = l
	}
	close(x.done)
}

// remove unregisters x, and reports whether it was still registered. It
// never touches another attempt of the same job.
func (r *registry) remove(x *running) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs[x.key()] != x {
		return false
	}
	delete(r.jobs, x.key())
	close(r.gone)
	r.gone = make(chan struct{})
	return true
}

// left returns a channel that is closed when the next job leaves, and how
// many jobs are registered now; read together, no departure is missed.
func (r *registry) left() (<-chan struct{}, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone, len(r.jobs)
}

func (r *registry) beaten(x *running, at time.Time) {
	r.mu.Lock()
	x.lastBeat = at
	r.mu.Unlock()
}

// unrenewed reports whether x's lease has gone unrenewed for half of it:
// the heartbeat renews at a third, so the renewals are failing, and a
// handler started now would run at most a quarter of the lease before
// the expiry loop stopped it.
func (r *registry) unrenewed(x *running, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Sub(x.lastBeat) >= x.lease/2
}

func (r *registry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs)
}

func (r *registry) snapshot() []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*running, 0, len(r.jobs))
	for _, x := range r.jobs {
		out = append(out, x)
	}
	return out
}

// alive returns every attempt whose goroutine has not returned.
func (r *registry) alive() []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*running
	for _, l := range r.live {
		out = append(out, l...)
	}
	return out
}

// settle marks x's handler as returned, and reports false when shutdown
// has already requeued the job: its outcome must then not be written.
func (r *registry) settle(x *running, reported sluicetype.Outcome) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.settled, x.reported = !x.abandoned, reported
	return x.settled
}

// reportedOf is what x's settled handler returned.
func (r *registry) reportedOf(x *running) sluicetype.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return x.reported
}

// abandonUnsettled marks every job whose handler has not returned as
// abandoned and returns them: shutdown requeues exactly these.
func (r *registry) abandonUnsettled() []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*running
	for _, x := range r.jobs {
		if !x.settled {
			x.abandoned = true
			out = append(out, x)
		}
	}
	return out
}

func (r *registry) cancelAll(cause error) {
	for _, x := range r.alive() {
		x.cancel(cause)
	}
}

// due groups, by lease token, the jobs whose last heartbeat is a third of
// their lease old.
func (r *registry) due(now time.Time) map[string][]*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*running{}
	for _, x := range r.jobs {
		if now.Sub(x.lastBeat) >= x.lease/3 {
			out[x.job.LockedBy] = append(out[x.job.LockedBy], x)
		}
	}
	return out
}

// expired returns the attempts whose handler has not returned and whose
// lease may run out within its margin: the last renewal began lease -
// margin ago or longer. One that returned has nothing left to stop: its
// fenced outcome is on the way, and the heartbeat keeps trying to renew
// its lease meanwhile.
// Each comes with how long its lease has left at the earliest.
func (r *registry) expired(now time.Time) []lapsing {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []lapsing
	for _, x := range r.jobs {
		if since := now.Sub(x.lastBeat); !x.settled && since >= x.lease-leaseMargin(x.lease) {
			out = append(out, lapsing{x, x.lease - since})
		}
	}
	return out
}

// lapsing is an attempt whose lease can pass at the database in left.
type lapsing struct {
	x    *running
	left time.Duration
}

func (r *registry) minLease() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := time.Duration(0)
	for _, x := range r.jobs {
		if m == 0 || x.lease < m {
			m = x.lease
		}
	}
	return m
}
