UPDATE sluice_schedules SET fires = fires + ? WHERE name = ?
