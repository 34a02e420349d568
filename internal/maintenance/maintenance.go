// Package maintenance runs the cluster's chores: every node rescues jobs
// whose lease expired, and one node at a time, the leader, cancels pending
// jobs past their deadline and purges finished jobs past their retention. Leadership is a row in the leases table, so
// any number of nodes can run this and no node is special.
package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/defaults"
	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/sluicetype"
)

// LeaderLease names the leadership row.
const LeaderLease = "maintenance"

// Config configures the maintenance service.
type Config struct {
	Driver driver.Driver
	NodeID string
	Logger *slog.Logger
	// Clock is the client's clock, required; it only paces the chores.
	Clock clock.Clock
	// Retention per finished status; zero keeps that status forever.
	Retention map[sluicetype.Status]time.Duration
	// AuditRetention is how long audit entries are kept; zero or less
	// keeps them forever.
	AuditRetention time.Duration
	// RescueEvery defaults to 5s, PurgeEvery to 1m, LeaderTTL to 30s.
	// The leader also cancels jobs past their deadline every RescueEvery.
	RescueEvery, PurgeEvery, LeaderTTL time.Duration
	// KeepAttempts bounds the attempt history a rescue appends to; 0
	// means driver.DefaultKeepAttempts.
	KeepAttempts int
	// Rescued is called after a rescue pass that moved jobs.
	Rescued func(r sluicetype.RescueResult)
	// Chores, if set, runs with the purge, every PurgeEvery, while this
	// node leads: roll-up compaction and stale node rows.
	Chores func(ctx context.Context)
}

// Service rescues expired leases, elects a leader and runs the other
// chores while it leads.
type Service struct {
	cfg Config
	log *slog.Logger
	run service.Runner

	mu     sync.Mutex
	leader bool
}

// New builds a Service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		panic("maintenance: Config.Clock is nil")
	}
	cfg.RescueEvery = defaults.Positive(cfg.RescueEvery, 5*time.Second)
	cfg.PurgeEvery = defaults.Positive(cfg.PurgeEvery, time.Minute)
	cfg.LeaderTTL = defaults.Positive(cfg.LeaderTTL, 30*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: cfg.Logger}
}

// Start runs the service until Stop.
func (s *Service) Start(ctx context.Context) {
	s.run.Start(ctx, s.loop)
}

// Stop ends the service and gives up leadership.
func (s *Service) Stop() {
	if !s.run.Stop() {
		return
	}
	if s.IsLeader() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.cfg.Driver.ReleaseLease(ctx, driver.ReleaseLeaseParams{Name: LeaderLease, Holder: s.cfg.NodeID}); err != nil {
			s.log.Warn("releasing maintenance leadership", "err", err)
		}
		// Even if the release failed: a stopped node runs no chores, and
		// the lease it may still hold expires.
		s.setLeader(false)
	}
}

// IsLeader reports whether this node leads now.
func (s *Service) IsLeader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader
}

func (s *Service) setLeader(v bool) {
	s.mu.Lock()
	changed := s.leader != v
	s.leader = v
	s.mu.Unlock()
	if changed {
		s.log.Info("maintenance leadership changed", "leader", v, "node", s.cfg.NodeID)
	}
}

func (s *Service) loop(ctx context.Context) {
	var lastRescue, lastPurge time.Time
	tick := min(s.cfg.RescueEvery, s.cfg.LeaderTTL/3)
	for {
		l, err := s.cfg.Driver.AcquireLease(ctx, driver.LeaseParams{Name: LeaderLease, Holder: s.cfg.NodeID, TTL: s.cfg.LeaderTTL})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("maintenance leader election failed", "err", err)
			s.setLeader(false)
		} else {
			s.setLeader(l.Held)
		}
		now := s.cfg.Clock.Now()
		// Every node rescues, leader or not: a rescue is fenced (it takes
		// only leases expired at the database, each row once), so two
		// nodes rescuing at once move nothing twice, and a dead worker's
		// jobs come back within one lease plus one rescue interval even
		// when that worker also led, rather than after the leader's TTL.
		if now.Sub(lastRescue) >= s.cfg.RescueEvery {
			s.RescueAll(ctx)
			// One node is enough, and claims never start such a job
			// meanwhile: the sweep only makes its end visible.
			if s.IsLeader() {
				if _, err := SweepDeadlines(ctx, s.cfg.Driver, s.cfg.KeepAttempts, s.log); err != nil {
					s.log.Warn("deadline sweep failed", "err", err)
				}
			}
			lastRescue = now
		}
		if s.IsLeader() {
			if now.Sub(lastPurge) >= s.cfg.PurgeEvery {
				s.PurgeAll(ctx)
				if s.cfg.Chores != nil {
					s.cfg.Chores(ctx)
				}
				lastPurge = now
			}
		}
		if !service.Sleep(ctx, tick) {
			return
		}
	}
}

// RescueAll returns every expired lease to pending (or failed), in chunks.
func (s *Service) RescueAll(ctx context.Context) sluicetype.RescueResult {
	total, err := Rescue(ctx, s.cfg.Driver, s.cfg.KeepAttempts, s.log, s.cfg.Rescued)
	if err != nil {
		s.log.Warn("rescue failed", "err", err)
	}
	return total
}

// Rescue returns every expired lease to pending (or failed), in chunks of
// 1,000, logs what it moved and hands the total to rescued. The leader and
// a cron pass (which rescues before it claims) both go through it, so a
// rescue is logged and counted the same way whoever runs it. On an error
// it still reports what the chunks before it moved.
func Rescue(ctx context.Context, d driver.Driver, keepAttempts int, log *slog.Logger, rescued func(sluicetype.RescueResult)) (sluicetype.RescueResult, error) {
	var total sluicetype.RescueResult
	var err error
	for ctx.Err() == nil {
		var r sluicetype.RescueResult
		if r, err = d.Rescue(ctx, driver.RescueParams{Limit: 1000, KeepAttempts: keepAttempts}); err != nil {
			break
		}
		total.Add(r)
		if r.Pending+r.Failed < 1000 {
			break
		}
	}
	if total.Pending+total.Failed > 0 {
		log.Warn("rescued jobs with expired leases", "to_pending", total.Pending, "to_failed", total.Failed)
		if rescued != nil {
			rescued(total)
		}
	}
	return total, err
}

// SweepDeadlines cancels every pending job whose deadline has passed, in
// chunks of 1,000, logs how many and returns the count. The leader and a
// cron pass (before it claims) both go through it. On an error it still
// reports what the chunks before it cancelled.
func SweepDeadlines(ctx context.Context, d driver.Driver, keepAttempts int, log *slog.Logger) (int64, error) {
	var total int64
	var err error
	for ctx.Err() == nil {
		var n int64
		if n, err = d.SweepDeadlines(ctx, driver.SweepDeadlinesParams{Limit: 1000, KeepAttempts: keepAttempts}); err != nil {
			break
		}
		total += n
		if n < 1000 {
			break
		}
	}
	if total > 0 {
		log.Info("cancelled jobs past their deadline", "jobs", total)
	}
	return total, err
}

// PurgeAll deletes finished jobs past retention, a chunk at a time so that
// no statement holds locks for long, and audit entries past theirs (in
// one statement: operators do not act thousands of times a minute).
func (s *Service) PurgeAll(ctx context.Context) {
	if s.cfg.AuditRetention > 0 {
		n, err := s.cfg.Driver.PruneAudit(ctx, driver.PruneAuditParams{OlderThan: s.cfg.AuditRetention})
		switch {
		case err != nil:
			s.log.Warn("audit prune failed", "err", err)
		case n > 0:
			s.log.Info("pruned audit entries past retention", "entries", n, "retention", s.cfg.AuditRetention)
		}
	}
	for status, keep := range s.cfg.Retention {
		if keep <= 0 {
			continue
		}
		if _, err := Purge(ctx, s.cfg.Driver, s.log, status, keep); err != nil {
			s.log.Warn("purge failed", "status", status, "err", err)
		}
	}
}

// Purge deletes the jobs finished in status longer than olderThan ago, in
// chunks of 1,000 so that no statement holds locks for long, logs what it
// deleted and returns the count. Retention and an operator's purge both go
// through it. On an error it still reports what the chunks before it deleted.
func Purge(ctx context.Context, d driver.Driver, log *slog.Logger, status sluicetype.Status, olderThan time.Duration) (int64, error) {
	var total int64
	var err error
	for ctx.Err() == nil {
		var n int64
		if n, err = d.Purge(ctx, driver.PurgeParams{Status: status, OlderThan: olderThan, Limit: 1000}); err != nil {
			break
		}
		total += n
		if n < 1000 {
			break
		}
	}
	if total > 0 {
		log.Info("purged finished jobs", "status", status, "rows", total, "older_than", olderThan)
	}
	return total, err
}
