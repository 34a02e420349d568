// Package authtoken makes API tokens and judges the strength of those an
// operator chooses: one rule, used where a config is loaded, where the
// server is built and by `sluice token new`.
package authtoken

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math"
	"strings"
)

// MinBits is the least estimated entropy a token may have. The brakes
// bound how fast guesses are tested (docs/http-api.md, "Brakes"); at
// 128 bits no rate makes guessing worthwhile.
const MinBits = 128

// Hint says how to make a good token, for error messages and docs.
const Hint = "make one with `sluice token new`"

// New returns a token of 32 random bytes, base64url without padding:
// 256 bits in 43 characters that need no quoting in YAML, a header or a
// shell.
func New() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Bits estimates the entropy of tok as if each character were drawn at
// random from the classes it uses: hex digits count 4 bits, digits alone
// 3.3, and each further class (lower case, upper case, other symbols)
// widens the alphabet. A chosen phrase scores high for its length, so
// the estimate is an upper bound: it refuses tokens that are too short
// for any alphabet, which is what a guesser exploits first.
func Bits(tok string) float64 {
	if tok == "" {
		return 0
	}
	var lower, upper, digit, other bool
	hex := true // every letter is one of a-f, or every one of A-F
	for _, r := range tok {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z':
			lower, hex = true, hex && r <= 'f'
		case r >= 'A' && r <= 'Z':
			upper, hex = true, hex && r <= 'F'
		default:
			other = true
		}
	}
	alphabet := 0
	if hex && !other && lower != upper {
		alphabet = 16
	} else {
		for _, c := range []struct {
			in bool
			n  int
		}{{digit, 10}, {lower, 26}, {upper, 26}, {other, 33}} {
			if c.in {
				alphabet += c.n
			}
		}
	}
	return float64(len([]rune(tok))) * math.Log2(float64(alphabet))
}

// Check returns an error when tok is weaker than MinBits. The error
// names neither the token nor any part of it.
func Check(tok string) error {
	if strings.TrimSpace(tok) != tok {
		return fmt.Errorf("token has leading or trailing space, which a Bearer header cannot carry; %s", Hint)
	}
	if b := Bits(tok); b < MinBits {
		return fmt.Errorf("token too weak: about %d bits of entropy, want at least %d (%d characters); %s",
			int(b), MinBits, len([]rune(tok)), Hint)
	}
	return nil
}
