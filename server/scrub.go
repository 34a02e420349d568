package server

import (
	"regexp"
	"strconv"
	"strings"
)

// redacted replaces a secret in the log.
const redacted = "REDACTED"

// tokenParam matches a parameter whose name says it holds a token
// (token=, access_token=, Token:), up to the value's end.
var tokenParam = regexp.MustCompile(`(?i)(token["']?\s*[=:]\s*)[^&;,/?#\s"']*`)

// scrubber removes tokens from what the request log says of a request's
// path and query, in every form a client can spell them: percent-encoded
// once or more (/v1/jobs%3Ftoken=…), in the path or in the query, under
// any parameter name with "token" in it, and any configured token
// wherever it appears.
type scrubber struct{ tokens []string }

// scrub returns s fit for the log: s itself when no decoding of it shows
// a token, else its fully decoded form with every token replaced.
func (sc scrubber) scrub(s string) string {
	forms := []string{s}
	for cur := s; len(forms) < 8; {
		next := unescape(strings.ReplaceAll(cur, "+", " "))
		if next == cur {
			break
		}
		forms, cur = append(forms, next), next
	}
	hit := false
	for _, f := range forms {
		if tokenParam.MatchString(f) || sc.hasToken(f) {
			hit = true
			break
		}
	}
	if !hit {
		return s
	}
	out := tokenParam.ReplaceAllString(forms[len(forms)-1], "${1}"+redacted)
	for _, t := range sc.tokens {
		out = strings.ReplaceAll(out, t, redacted)
	}
	return out
}

// unescape decodes every valid %XX of s and keeps the rest as it is: one
// stray "%" (a query's "100%") must not stop the decoding, or a token
// spelled with escapes elsewhere in s would reach the log undecoded.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (sc scrubber) hasToken(s string) bool {
	for _, t := range sc.tokens {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}
