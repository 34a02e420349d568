package driver

import (
	"errors"
	"fmt"
	"strings"
)

// CheckName is the one rule for the names sluice stores in a column of
// limited width: queue and type names (MaxQueueLen, MaxTypeLen) and lock
// names. A name is not empty, fits its column on every database, and has no
// NUL byte, which PostgreSQL refuses in text. Callers prefix the field, so
// the message says only what is wrong.
func CheckName(name string, maxLen int) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > maxLen:
		return fmt.Errorf("%d characters, at most %d allowed", len(name), maxLen)
	case strings.ContainsRune(name, 0):
		return errors.New("contains a NUL byte")
	}
	return nil
}
