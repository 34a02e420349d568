package dashboard

import (
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// secs shows whole seconds: 1m5s.
func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

// wait shows a queue latency's p50 / p95 ("—" for none) as app.js's wait
// does: milliseconds under a second, tenths under a minute, then secs.
func wait(l *sluicetype.LatencyStats) string {
	if l == nil {
		return "—"
	}
	d := func(s float64) string {
		switch {
		case s < 1:
			return strconv.FormatFloat(math.Round(s*1000), 'f', 0, 64) + "ms"
		case s < 60:
			return strconv.FormatFloat(s, 'f', 1, 64) + "s"
		}
		return secs(s)
	}
	return d(l.P50) + " / " + d(l.P95)
}
