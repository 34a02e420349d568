package driver

// DefaultKeepAttempts is how many attempts a job's history keeps when the
// caller sets no limit.
const DefaultKeepAttempts = 20

// MaxAttemptErrorLen bounds the error kept with each attempt of the
// history; last_error keeps the latest one at MaxErrorLen.
const MaxAttemptErrorLen = 1 << 10

// KeepAttempts is n, or DefaultKeepAttempts when n is not positive.
func KeepAttempts(n int) int {
	if n <= 0 {
		return DefaultKeepAttempts
	}
	return n
}
