package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/racetest"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseSchedule(t *testing.T, open Opener) {
	t.Run("InitAdvanceRead", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		state := func(name string) sluicetype.ScheduleState {
			t.Helper()
			s, err := b.d.ScheduleState(b.ctx, driver.ScheduleStateParams{Name: name})
			require.NoError(t, err)
			return s
		}
		advance := func(p driver.AdvanceScheduleParams) bool {
			t.Helper()
			ok, err := b.d.AdvanceSchedule(b.ctx, p)
			require.NoError(t, err)
			return ok
		}

		require.Equal(t, sluicetype.ScheduleState{Name: "nightly"}, state("nightly"), "a new schedule is not found")

		// Slots are instants: a caller's zone must not shift them.
		zone := time.FixedZone("UTC-7", -7*3600)
		slot1 := time.Date(2026, 3, 1, 2, 0, 0, 0, zone)
		before := b.now()
		require.NoError(t, b.d.InitSchedule(b.ctx, driver.InitScheduleParams{Name: "nightly", Last: slot1}))
		after := b.now()
		s := state("nightly")
		require.True(t, s.Found)
		require.Equal(t, "nightly", s.Name)
		require.True(t, s.LastSlot.Equal(slot1), "last slot = %s, want %s", s.LastSlot, slot1.UTC())
		require.Zero(t, s.LastJobID)
		require.Zero(t, s.Fires)
		require.Zero(t, s.Skips)
		requireBetween(t, s.UpdatedAt, before, after, "updated_at")
		v0 := s.Version

		// Init of an existing schedule changes nothing, so every node may call it.
		require.NoError(t, b.d.InitSchedule(b.ctx, driver.InitScheduleParams{Name: "nightly", Last: slot1.Add(time.Hour)}))
		require.Equal(t, s, state("nightly"))

		slot2 := slot1.Add(24 * time.Hour)
		require.True(t, advance(driver.AdvanceScheduleParams{Name: "nightly", Version: v0, LastSlot: slot2, LastJobID: 42, Fired: 1}))
		s = state("nightly")
		require.True(t, s.LastSlot.Equal(slot2))
		require.EqualValues(t, 42, s.LastJobID)
		require.EqualValues(t, 1, s.Fires)
		require.Zero(t, s.Skips)
		require.Greater(t, s.Version, v0)
		v1 := s.Version

		// A node that read the old version lost the race: the slot, job and
		// version stay, but the job it created still counts as fired, and
		// its skips do not (another node may have skipped the same slot).
		require.False(t, advance(driver.AdvanceScheduleParams{Name: "nightly", Version: v0, LastSlot: slot2.Add(time.Hour), LastJobID: 99, Fired: 1, Skipped: 3}))
		lost := state("nightly")
		require.True(t, lost.LastSlot.Equal(slot2))
		require.EqualValues(t, 42, lost.LastJobID)
		require.Equal(t, v1, lost.Version)
		require.EqualValues(t, 2, lost.Fires)
		require.Zero(t, lost.Skips)
		s = lost

		// Skipped slots count, and LastJobID 0 keeps the previous job.
		slot3 := slot2.Add(72 * time.Hour)
		require.True(t, advance(driver.AdvanceScheduleParams{Name: "nightly", Version: v1, LastSlot: slot3, Skipped: 2}))
		s = state("nightly")
		require.True(t, s.LastSlot.Equal(slot3))
		require.EqualValues(t, 42, s.LastJobID)
		require.EqualValues(t, 2, s.Fires)
		require.EqualValues(t, 2, s.Skips)
		require.Greater(t, s.Version, v1)

		// An unknown schedule cannot be advanced.
		require.False(t, advance(driver.AdvanceScheduleParams{Name: "nope", Version: 0, LastSlot: slot3, Fired: 1}))
		require.False(t, state("nope").Found, "counting a lost race's fires creates no row")
	})

	t.Run("ListByName", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		list, err := b.d.ListSchedules(b.ctx)
		require.NoError(t, err)
		require.Empty(t, list)

		slot := b.now().Truncate(time.Second)
		for _, name := range []string{"zeta", "alpha", "mid"} {
			require.NoError(t, b.d.InitSchedule(b.ctx, driver.InitScheduleParams{Name: name, Last: slot}))
		}
		list, err = b.d.ListSchedules(b.ctx)
		require.NoError(t, err)
		var names []string
		for _, s := range list {
			names = append(names, s.Name)
			require.True(t, s.Found)
			require.True(t, s.LastSlot.Equal(slot))
			one, err := b.d.ScheduleState(b.ctx, driver.ScheduleStateParams{Name: s.Name})
			require.NoError(t, err)
			require.Equal(t, one, s, "ListSchedules and ScheduleState disagree on %s", s.Name)
		}
		require.Equal(t, []string{"alpha", "mid", "zeta"}, names)
	})

	t.Run("ConcurrentAdvanceHasOneWinner", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		slot := b.now().Truncate(time.Minute)
		require.NoError(t, b.d.InitSchedule(b.ctx, driver.InitScheduleParams{Name: "every-minute", Last: slot}))
		s, err := b.d.ScheduleState(b.ctx, driver.ScheduleStateParams{Name: "every-minute"})
		require.NoError(t, err)

		// Every node computed the same next slot from the same version.
		const nodes = 8
		won := make([]bool, nodes)
		racetest.Run(t, nodes, func(i int) (err error) {
			won[i], err = b.d.AdvanceSchedule(b.ctx, driver.AdvanceScheduleParams{
				Name: "every-minute", Version: s.Version, LastSlot: slot.Add(time.Minute), LastJobID: int64(100 + i), Fired: 1,
			})
			return err
		})
		winner := -1
		for i, w := range won {
			if w {
				require.Equal(t, -1, winner, "nodes %d and %d both advanced", winner, i)
				winner = i
			}
		}
		require.NotEqual(t, -1, winner, "no node advanced the schedule")
		after, err := b.d.ScheduleState(b.ctx, driver.ScheduleStateParams{Name: "every-minute"})
		require.NoError(t, err)
		// Each node here claims to have created a job, so each counts.
		require.EqualValues(t, nodes, after.Fires)
		require.EqualValues(t, 100+winner, after.LastJobID)
	})
}
