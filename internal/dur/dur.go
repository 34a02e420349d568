// Package dur parses durations as people write them in configs and flags:
// Go's syntax ("90s", "1h30m") plus days and weeks ("7d", "2w").
package dur

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse reads a duration such as "30s", "5m", "7d" or "2w".
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			// !(v >= 0) also refuses NaN.
			if err != nil || !(v >= 0) {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
			// A Duration ends near 292 years; converting more would wrap to a
			// negative value.
			if v*float64(unit) >= math.MaxInt64 {
				return 0, fmt.Errorf("duration %q is too long: at most %s", s, time.Duration(math.MaxInt64).Truncate(time.Hour))
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit: ms, s, m, h, d or w", s)
	}
	return d, nil
}
