package defaults_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/defaults"
)

func TestPositive(t *testing.T) {
	for _, c := range []struct{ v, want time.Duration }{{0, time.Second}, {-time.Minute, time.Second}, {time.Millisecond, time.Millisecond}} {
		if got := defaults.Positive(c.v, time.Second); got != c.want {
			t.Errorf("Positive(%s, 1s) = %s, want %s", c.v, got, c.want)
		}
	}
	if got := defaults.Positive(0.5, 200.0); got != 0.5 {
		t.Errorf("Positive(0.5, 200) = %g, want 0.5", got)
	}
}
