UPDATE sluice_schedules SET fires = fires + $1 WHERE name = $2
