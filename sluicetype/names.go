package sluicetype

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckName is the one rule for the names sluice stores in a column of
// limited width: queue and type names (MaxQueueLen, MaxTypeLen) and lock
// names. A name is not empty, is valid UTF-8, fits its column on every
// database (maxLen counts characters, as the databases do, not bytes), and
// has no NUL character, which PostgreSQL refuses in text. Callers prefix
// the field, so the message says only what is wrong.
func CheckName(name string, maxLen int) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	case utf8.RuneCountInString(name) > maxLen:
		return fmt.Errorf("%d characters, at most %d allowed", utf8.RuneCountInString(name), maxLen)
	case strings.IndexByte(name, 0) >= 0:
		return errors.New("contains a NUL character")
	}
	return nil
}

// CheckPartition is the one rule for a job's partition (fairness key): ""
// for none, or up to MaxPartitionLen ASCII letters, digits and the
// characters _ - . : @ /. The narrow alphabet keeps a tenant id, a UUID or
// an e-mail domain possible while making the round-robin order (byte
// order) the same on every database and the key safe to show anywhere.
func CheckPartition(p string) error {
	if len(p) > MaxPartitionLen {
		return fmt.Errorf("%d characters, at most %d allowed", len(p), MaxPartitionLen)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.:@/", c) >= 0) {
			return fmt.Errorf("character %q at byte %d: want ASCII letters, digits and _ - . : @ /", rune(c), i)
		}
	}
	return nil
}
