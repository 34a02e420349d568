// Package defaults fills in the settings a caller left unset.
package defaults

// number is what Positive takes: counts, rates and time.Duration.
type number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Positive returns v, or def when v is zero or negative: the rule of
// every interval, count and rate setting whose zero value means "the
// default" and for which a negative one means nothing else.
func Positive[T number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
