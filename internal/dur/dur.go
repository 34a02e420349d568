// Package dur parses durations as people write them in configs and flags:
// Go's syntax ("90s", "1h30m") plus days and weeks ("7d", "2w").
package dur

import (
	"fmt"
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
			if err != nil || v < 0 {
				return 0, fmt.Errorf("invalid duration %q", s)
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
