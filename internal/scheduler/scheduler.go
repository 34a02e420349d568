// Package scheduler turns cron slots into jobs. Every node runs it and no
// node leads: each slot's job carries the key sched:<name>:<slot>, so the
// first node to enqueue it wins and the others get a duplicate, and each
// schedule's progress is advanced with a compare-and-set on its row.
package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/sluicetype"
)

// Overlap policies, for the config file and the Go API alike.
const (
	// OverlapForbid skips a slot while the previous slot's job is pending
	// or processing, so that two runs of a schedule never overlap.
	OverlapForbid = "forbid"
	// OverlapAllow fires every slot whatever the previous run is doing.
	OverlapAllow = "allow"
	// DefaultOverlap is the policy of a schedule that names none. Forbid,
	// because a cron job replaced by a schedule is one that must not run
	// twice at once.
	DefaultOverlap = OverlapForbid
)

// Entry is one schedule.
type Entry struct {
	Name    string
	Spec    *cron.Expr
	Overlap string // OverlapForbid or OverlapAllow; empty means DefaultOverlap
	CatchUp int    // missed slots to enqueue after downtime; default 1
}

// lateGrace is how late a slot may be handled and still not count as
// missed; maxLate bounds how many such slots one pass fires.
const (
	lateGrace = 5 * time.Second
	maxLate   = 1000
)

// EnqueueFunc enqueues the job of one slot under key and returns its id.
type EnqueueFunc func(ctx context.Context, e Entry, key string) (id int64, duplicate bool, err error)

// Hooks observe the scheduler; any may be nil.
type Hooks struct {
	Fired   func(name string)
	Skipped func(name string)
}

// Config configures a Scheduler.
type Config struct {
	Driver  driver.Driver
	Entries []Entry
	Enqueue EnqueueFunc
	Logger  *slog.Logger
	Hooks   Hooks
	// MaxSleep caps the wait between passes; default 1s.
	MaxSleep time.Duration
}

// Scheduler fires the slots of its entries.
type Scheduler struct {
	cfg Config
	log *slog.Logger
	run service.Runner
}

// New builds a Scheduler.
func New(cfg Config) *Scheduler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxSleep <= 0 {
		cfg.MaxSleep = time.Second
	}
	return &Scheduler{cfg: cfg, log: cfg.Logger}
}

// Start runs the scheduler until Stop.
func (s *Scheduler) Start(ctx context.Context) {
	s.run.Start(ctx, s.loop)
}

// Stop ends the scheduler.
func (s *Scheduler) Stop() { s.run.Stop() }

func (s *Scheduler) loop(ctx context.Context) {
	for {
		wait := s.cfg.MaxSleep
		if next, err := s.Pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("scheduler pass failed", "err", err)
		} else if next > 0 && next < wait {
			// Wake just after the next slot so that it fires on time.
			wait = next + 5*time.Millisecond
		}
		if !service.Sleep(ctx, wait) {
			return
		}
	}
}

// Pass fires every due slot once, using the database clock, and returns
// how long until the earliest next slot.
func (s *Scheduler) Pass(ctx context.Context) (time.Duration, error) {
	now, err := s.cfg.Driver.Now(ctx)
	if err != nil {
		return 0, err
	}
	next := time.Duration(0)
	var errs []error
	for _, e := range s.cfg.Entries {
		last, err := s.fire(ctx, e, now)
		if err != nil {
			errs = append(errs, err)
			last = now
		}
		// From the last slot, not from now: @every slots follow each other
		// at fixed intervals from the schedule's start.
		d := e.Spec.Next(last).At.Sub(now)
		if next == 0 || d < next {
			next = d
		}
	}
	if len(errs) > 0 {
		return next, fmt.Errorf("%d schedules failed, first: %w", len(errs), errs[0])
	}
	return next, nil
}

// fire enqueues the due slots of e and returns the last slot handled (the
// start of a new schedule), from which its next slot follows.
func (s *Scheduler) fire(ctx context.Context, e Entry, now time.Time) (time.Time, error) {
	st, err := s.cfg.Driver.ScheduleState(ctx, driver.ScheduleStateParams{Name: e.Name})
	if err != nil {
		return time.Time{}, err
	}
	if !st.Found {
		// A new schedule starts from now: there is nothing it missed.
		return now, s.cfg.Driver.InitSchedule(ctx, driver.InitScheduleParams{Name: e.Name, Last: now})
	}
	// Slots from the last few seconds are late, not missed: a slow pass
	// (a busy database, a GC pause) fires them all. catch_up limits only
	// what fell due while no node ran.
	cut := now.Add(-lateGrace)
	var due []cron.Slot
	from := st.LastSlot
	if from.Before(cut) {
		due = e.Spec.Due(from, cut, e.CatchUp)
		if len(due) > 0 {
			// The late slots follow the last missed one. Starting them
			// from cut instead would shift an @every series, whose slots
			// count from the previous slot, lateGrace late for good.
			from = due[len(due)-1].At
		}
	}
	due = append(due, e.Spec.Due(from, now, maxLate)...)
	if len(due) == 0 {
		return st.LastSlot, nil
	}
	forbid := cmp.Or(e.Overlap, DefaultOverlap) == OverlapForbid
	lastJob, fired, skipped := st.LastJobID, 0, 0
	var last time.Time // the last slot handled
	var failed error   // why the slots after last were not
	for _, slot := range due {
		if forbid && lastJob > 0 {
			active, err := s.active(ctx, lastJob)
			if err != nil {
				failed = fmt.Errorf("schedule %s slot %s: %w", e.Name, slot.Key, err)
				break
			}
			if active {
				skipped++
				last = slot.At
				s.log.Info("schedule slot skipped: the previous run is still active", "schedule", e.Name, "slot", slot.Key, "job_id", lastJob)
				if h := s.cfg.Hooks.Skipped; h != nil {
					h(e.Name)
				}
				continue
			}
		}
		id, dup, err := s.cfg.Enqueue(ctx, e, "sched:"+e.Name+":"+slot.Key)
		if err != nil {
			failed = fmt.Errorf("schedule %s slot %s: %w", e.Name, slot.Key, err)
			break
		}
		lastJob, last = id, slot.At
		if !dup {
			fired++
			s.log.Info("schedule fired", "schedule", e.Name, "slot", slot.Key, "job_id", id)
			if h := s.cfg.Hooks.Fired; h != nil {
				h(e.Name)
			}
		}
	}
	if last.IsZero() {
		return time.Time{}, failed
	}
	// What was handled is recorded even when the pass was cut short, by an
	// error or by the process stopping (ctx): a slot whose job this node
	// created and did not count would be missing from the schedule's
	// fires for good (seen when a node stopped between the two). Losing
	// the compare-and-set means another node handled these slots too; the
	// keys made sure each fired once.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), advanceTimeout)
	defer cancel()
	_, err = s.cfg.Driver.AdvanceSchedule(actx, driver.AdvanceScheduleParams{Name: e.Name, Version: st.Version,
		LastSlot: last, LastJobID: lastJob, Fired: fired, Skipped: skipped})
	return last, errors.Join(failed, err)
}

// advanceTimeout bounds the write that records a pass's slots once their
// jobs exist, which a stopping process still makes.
const advanceTimeout = 10 * time.Second

func (s *Scheduler) active(ctx context.Context, id int64) (bool, error) {
	j, err := s.cfg.Driver.GetJob(ctx, id)
	if err != nil {
		if errors.Is(err, sluicetype.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return j.Status == sluicetype.StatusPending || j.Status == sluicetype.StatusProcessing, nil
}

// LastSlot returns the last slot the schedule handled (fired or skipped),
// and false when it handled none yet: a new schedule's row holds the time
// it started from, which is no slot.
func LastSlot(st sluicetype.ScheduleState) (time.Time, bool) {
	if !st.Found || st.Fires+st.Skips == 0 && st.LastJobID == 0 {
		return time.Time{}, false
	}
	return st.LastSlot, true
}

// NextSlot returns the schedule's first slot after now, as the scheduler
// will fire it: the series goes on from the last slot handled (an @every
// interval counts from it), or from now for a schedule not started yet.
func NextSlot(spec *cron.Expr, st sluicetype.ScheduleState, now time.Time) cron.Slot {
	from := now
	if st.Found {
		from = st.LastSlot
		if due := spec.Due(from, now, 1); len(due) > 0 {
			from = due[0].At
		}
	}
	return spec.Next(from)
}
