package mysql

// SetConsecutiveIDs lets tests take the insert path that servers with
// innodb_autoinc_lock_mode = 2 use, which the test server may not run.
func SetConsecutiveIDs(d *Driver, v bool) { d.consecutiveIDs = v }
