package driver

import (
	"fmt"
	"regexp"
)

// DefaultPrefix starts every table and index name in the embedded SQL. A
// driver opened with another prefix rewrites it, which lets benchmarks and
// tests keep their tables apart from the application's.
const DefaultPrefix = "sluice_"

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}_$`)

// ValidatePrefix checks a table prefix; it ends up in SQL text, so only a
// narrow alphabet is allowed.
func ValidatePrefix(prefix string) error {
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("table prefix %q: want lower-case letters, digits and underscores, ending in _", prefix)
	}
	return nil
}
