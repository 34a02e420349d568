// Package cron parses cron expressions and computes the slots an
// expression fires at, with daylight-saving rules that cron users expect:
// a slot whose wall-clock time repeats when the clock falls back fires
// once, and a slot skipped when the clock springs forward fires at the
// moment of the jump instead of being lost.
package cron

import (
	"fmt"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
)

var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Expr is a parsed cron expression in a time zone.
type Expr struct {
	expr  string
	spec  robfig.Schedule
	loc   *time.Location
	every bool // @every: fixed intervals, keyed by instant
}

// Parse reads a 5-field cron expression, an optional leading seconds field,
// a descriptor such as @hourly, or @every 30s. loc nil means UTC.
func Parse(expr string, loc *time.Location) (*Expr, error) {
	if loc == nil {
		loc = time.UTC
	}
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("invalid cron expression %q: set the time zone with timezone:, not in the expression", expr)
	}
	spec, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid cron expression %q: %w", expr, err)
	}
	return &Expr{expr: expr, spec: spec, loc: loc, every: strings.HasPrefix(expr, "@every")}, nil
}

// String returns the expression.
func (s *Expr) String() string { return s.expr }

// Location returns the expression's time zone.
func (s *Expr) Location() *time.Location { return s.loc }

// Slot is one firing: At is the instant it is due, Key names it uniquely.
// Cron slots are named by their wall-clock time in the expression's zone, so
// the two instants of a repeated wall time share one key and fire once.
type Slot struct {
	At  time.Time
	Key string
}

const keyLayout = "2006-01-02T15:04:05"

// Next returns the first slot after t.
func (s *Expr) Next(t time.Time) Slot {
	t = t.In(s.loc)
	n := s.spec.Next(t)
	if s.every {
		return Slot{At: n.UTC(), Key: n.UTC().Format(keyLayout) + "Z"}
	}
	if g, ok := s.skipped(t, n); ok {
		return g
	}
	return Slot{At: n.UTC(), Key: n.Format(keyLayout)}
}

// skipped finds a slot that a spring-forward jump between t and n swallowed:
// its wall time never happened, so it fires at the instant of the jump.
func (s *Expr) skipped(t, n time.Time) (Slot, bool) {
	cur := t
	for {
		_, end := cur.ZoneBounds()
		if end.IsZero() || end.After(n) {
			return Slot{}, false
		}
		_, before := cur.Zone()
		_, after := end.Zone()
		if after > before {
			// In a zone that keeps the old offset, the wall clock runs on
			// through the hour that the real zone skipped.
			fixed := time.FixedZone("", before)
			from := t
			if end.Add(-time.Nanosecond).After(from) {
				from = end.Add(-time.Nanosecond)
			}
			g := s.spec.Next(from.In(fixed))
			if g.Before(end.Add(time.Duration(after-before) * time.Second)) {
				return Slot{At: end.UTC(), Key: g.Format(keyLayout)}, true
			}
		}
		cur = end
	}
}

// Due returns the slots after last and up to now, oldest first, keeping
// at most the catchUp most recent ones (catchUp < 1 means 1).
func (s *Expr) Due(last, now time.Time, catchUp int) []Slot {
	if catchUp < 1 {
		catchUp = 1
	}
	var out []Slot
	for t := last; ; {
		sl := s.Next(t)
		if sl.At.After(now) {
			break
		}
		t = sl.At
		if len(out) > 0 && out[len(out)-1].Key == sl.Key {
			continue // the repeated wall time of a fall-back night
		}
		out = append(out, sl)
		if len(out) > catchUp {
			out = out[1:]
		}
	}
	return out
}
