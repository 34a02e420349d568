package cron_test

import (
	"fmt"
	"log"
	"time"
	_ "time/tzdata" // the zones below, on systems without a zoneinfo database

	"github.com/sluicehq/sluice/cron"
)

// Parse an expression and list its next slots: 5 fields (minute, hour,
// day of month, month, day of week), in UTC when no zone is given. Each
// slot's Key, its wall-clock time in the expression's zone, names it; a
// schedule's job key is made of it.
func ExampleParse() {
	e, err := cron.Parse("30 9 * * 1-5", nil) // 09:30 on weekdays
	if err != nil {
		log.Fatal(err)
	}
	t := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) // a Friday noon
	for range 3 {
		s := e.Next(t)
		fmt.Println(s.At.Format("Mon 2006-01-02 15:04 MST"), s.Key)
		t = s.At
	}
	_, err = cron.Parse("30 25 * * *", nil)
	fmt.Println(err != nil)
	// Output:
	// Mon 2026-12-07 09:30 UTC 2026-12-07T09:30:00
	// Tue 2026-12-08 09:30 UTC 2026-12-08T09:30:00
	// Wed 2026-12-09 09:30 UTC 2026-12-09T09:30:00
	// true
}

// Due is what a schedule runs after downtime: the slots missed between
// the last one handled and now, keeping only the catchUp most recent.
func ExampleExpr_Due() {
	e, err := cron.Parse("@hourly", nil)
	if err != nil {
		log.Fatal(err)
	}
	last := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 6, 12, 30, 0, 0, time.UTC) // down since 08:00
	for _, catchUp := range []int{1, 3} {
		fmt.Print("catch up ", catchUp, ":")
		for _, s := range e.Due(last, now, catchUp) {
			fmt.Print(" ", s.At.Format("15:04"))
		}
		fmt.Println()
	}
	// Output:
	// catch up 1: 12:00
	// catch up 3: 10:00 11:00 12:00
}

// In a zone with daylight saving, a slot that the spring-forward jump
// skips fires at the jump rather than being lost, and a wall time that
// happens twice when the clock falls back fires once. Slot.At is an
// instant (in UTC); show it in the zone.
func ExampleParse_daylightSaving() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		log.Fatal(err)
	}
	e, err := cron.Parse("30 2 * * *", berlin) // 02:30 every day
	if err != nil {
		log.Fatal(err)
	}
	// 2026-03-29: clocks go from 02:00 to 03:00, so 02:30 does not exist.
	s := e.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, berlin))
	fmt.Println("spring:", s.At.In(berlin).Format("2006-01-02 15:04 MST"))
	// 2026-10-25: clocks go from 03:00 back to 02:00, so 02:30 happens twice.
	from := time.Date(2026, 10, 25, 0, 0, 0, 0, berlin)
	slots := e.Due(from, from.Add(6*time.Hour), 10)
	for _, s := range slots {
		fmt.Println("autumn:", s.At.In(berlin).Format("2006-01-02 15:04 MST"), s.Key)
	}
	// Output:
	// spring: 2026-03-29 03:00 CEST
	// autumn: 2026-10-25 02:30 CEST 2026-10-25T02:30:00
}
