package worker

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// running is one job between claim and its written outcome.
type running struct {
	job      sluicetype.JobRow
	lease    time.Duration
	lastBeat time.Time
	claimed  time.Time // for the duration in job log lines
	cancel   context.CancelCauseFunc
	// settled: the handler returned and its outcome is on the way to the
	// database. abandoned: shutdown gave up on the handler and requeued
	// the job. The registry's lock makes them exclusive, so a job is never
	// both requeued and written with its own outcome.
	settled, abandoned bool
}

// registry tracks running jobs for the heartbeat and for shutdown.
type registry struct {
	mu   sync.Mutex
	jobs map[int64]*running
	gone chan struct{} // closed, and replaced, when a job leaves
}

func newRegistry() *registry {
	return &registry{jobs: map[int64]*running{}, gone: make(chan struct{})}
}

func (r *registry) add(x *running) {
	r.mu.Lock()
	r.jobs[x.job.ID] = x
	r.mu.Unlock()
}

// remove reports whether the job was still registered.
func (r *registry) remove(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.jobs[id]
	delete(r.jobs, id)
	if ok {
		close(r.gone)
		r.gone = make(chan struct{})
	}
	return ok
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

// settle marks x's handler as returned, and reports false when shutdown
// has already requeued the job: its outcome must then not be written.
func (r *registry) settle(x *running) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.settled = !x.abandoned
	return x.settled
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
	for _, x := range r.snapshot() {
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
