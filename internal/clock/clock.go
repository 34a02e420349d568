// Package clock is the engine's one way to read this process's time.
//
// Run-at, lease, rescue and schedule decisions use the database clock. What
// the engine still reads of its own clock (roll-up minutes, when to renew a
// lease, durations for logs and metrics) goes through the Clock that
// sluice.Config.Clock injects, so that a test can skew all of it at once
// (SLUICE_CLOCK_OFFSET) and show that no decision depends on it.
// TestEngineReadsTimeOnlyThroughClock keeps time.Now, time.Since,
// time.Until and context.WithDeadline out of the engine and the drivers.
package clock

import "time"

// Clock reads this process's wall clock.
type Clock func() time.Time

// System is the host's clock, the default.
func System() time.Time { return time.Now() }

// Now reads the clock.
func (c Clock) Now() time.Time { return c() }

// Since is how long ago t was, t being a reading of the same clock. Such
// readings keep the monotonic clock (time.Time.Add moves it with an
// offset), so the durations the engine measures for logs, metrics and
// lease renewals ignore both an offset and steps of the wall clock.
//
// A reading must never become a deadline the runtime compares with its own
// clock (context.WithDeadline, time.Until): an offset would move it. Use a
// duration (context.WithTimeout, time.After) instead.
func (c Clock) Since(t time.Time) time.Duration { return c().Sub(t) }
