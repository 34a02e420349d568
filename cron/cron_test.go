package cron

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, expr, tz string) *Expr {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	require.NoError(t, err)
	s, err := Parse(expr, loc)
	require.NoError(t, err)
	return s
}

func keys(slots []Slot) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.Key
	}
	return out
}

func TestParseForms(t *testing.T) {
	for _, expr := range []string{"*/5 * * * *", "0 30 * * * *", "@hourly", "@every 30s", "0 9 * * MON-FRI"} {
		_, err := Parse(expr, nil)
		require.NoError(t, err, expr)
	}
	for _, expr := range []string{"", "* * *", "61 * * * *", "@fortnightly", "CRON_TZ=UTC * * * * *"} {
		_, err := Parse(expr, nil)
		require.Error(t, err, expr)
	}
}

func TestSecondsField(t *testing.T) {
	s := mustParse(t, "15 * * * * *", "UTC")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, start.Add(15*time.Second), s.Next(start).At, "six fields start with seconds")
}

func TestNextInZone(t *testing.T) {
	s := mustParse(t, "*/5 * * * *", "Asia/Shanghai")
	from := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC) // 09:02:03 in Shanghai
	sl := s.Next(from)
	require.Equal(t, time.Date(2026, 11, 30, 1, 5, 0, 0, time.UTC), sl.At)
	require.Equal(t, "2026-11-30T09:05:00", sl.Key)
}

// On the night the clock falls back, 01:30 happens twice; it fires once.
func TestFallBackFiresOnce(t *testing.T) {
	s := mustParse(t, "30 1 * * *", "America/New_York")
	last := time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	require.Equal(t, []string{"2026-11-01T01:30:00", "2026-11-02T01:30:00"}, keys(s.Due(last, now, 10)))

	hourly := mustParse(t, "0 * * * *", "America/New_York")
	got := keys(hourly.Due(time.Date(2026, 11, 1, 4, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 8, 30, 0, 0, time.UTC), 10))
	// 01:00 EDT and 01:00 EST share a wall time: one slot.
	require.Equal(t, []string{"2026-11-01T01:00:00", "2026-11-01T02:00:00", "2026-11-01T03:00:00"}, got)
}

// On the night the clock springs forward, 02:30 never happens; it fires at
// the jump (03:00 EDT = 07:00 UTC) instead of being lost.
func TestSpringForwardNotLost(t *testing.T) {
	s := mustParse(t, "30 2 * * *", "America/New_York")
	last := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	now := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	due := s.Due(last, now, 10)
	require.Equal(t, []string{"2026-03-08T02:30:00", "2026-03-09T02:30:00"}, keys(due))
	require.Equal(t, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), due[0].At)

	// Several slots inside the skipped hour fire once, at the jump.
	every10 := mustParse(t, "*/10 2 * * *", "America/New_York")
	due = every10.Due(time.Date(2026, 3, 8, 6, 55, 0, 0, time.UTC), time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), 10)
	require.Equal(t, []string{"2026-03-08T02:00:00"}, keys(due))
}

func TestCatchUpKeepsMostRecent(t *testing.T) {
	s := mustParse(t, "0 * * * *", "UTC")
	last := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	now := time.Date(2026, 11, 30, 5, 30, 0, 0, time.UTC)
	require.Equal(t, []string{"2026-11-30T05:00:00"}, keys(s.Due(last, now, 1)))
	require.Equal(t, []string{"2026-11-30T03:00:00", "2026-11-30T04:00:00", "2026-11-30T05:00:00"}, keys(s.Due(last, now, 3)))
	require.Empty(t, s.Due(now, now, 3))
}

func TestEveryKeyedByInstant(t *testing.T) {
	s := mustParse(t, "@every 1s", "America/New_York")
	last := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	due := s.Due(last, last.Add(3*time.Second), 10)
	require.Equal(t, []string{"2026-11-30T00:00:01Z", "2026-11-30T00:00:02Z", "2026-11-30T00:00:03Z"}, keys(due))
}
