package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sign returns the X-Sluice-Signature value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<body>")>". Signing the
// timestamp with the body lets a receiver reject replayed requests.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// SignKey returns the X-Sluice-Signature value sluice sends: Sign's v1,
// and v2, which also covers the Idempotency-Key a receiver records:
// "v2=<hex HMAC-SHA256(secret, "<unix>.<len(key)>:<key>.<body>")>". v1
// alone lets a captured delivery be replayed inside the window under
// another key, which a receiver keyed on that header applies again.
func SignKey(secret string, t time.Time, key string, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body)) + ",v2=" + hex.EncodeToString(macKey(secret, ts, key, body))
}

func macKey(secret, ts, key string, body []byte) []byte {
	// The key's length makes the message unambiguous whatever the key holds.
	return mac(secret, ts, append([]byte(strconv.Itoa(len(key))+":"+key+"."), body...))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks an X-Sluice-Signature header against the raw request body,
// for receivers written in Go. It accepts the header when any v1 value
// matches, so that a sender can send signatures for an old and a new
// secret during a rotation. A positive tolerance also rejects a timestamp
// further than that from now, which stops replays; zero skips that check.
func Verify(secret, header string, body []byte, tolerance time.Duration) error {
	return verify(header, "v1", func(ts string) []byte { return mac(secret, ts, body) }, tolerance)
}

// VerifyKey is Verify for a receiver that records the Idempotency-Key
// header (key): it requires a v2 signature, which covers the key too.
func VerifyKey(secret, header, key string, body []byte, tolerance time.Duration) error {
	return verify(header, "v2", func(ts string) []byte { return macKey(secret, ts, key, body) }, tolerance)
}

func verify(header, version string, want func(ts string) []byte, tolerance time.Duration) error {
	if header == "" {
		return errors.New("webhook signature: missing")
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case version:
			// A value that is not hex cannot match; skip it rather than
			// fail, so an unknown format next to a good one still works.
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook signature: bad or missing timestamp %q", ts)
	}
	if len(sigs) == 0 {
		return errors.New("webhook signature: no " + version + " signature")
	}
	if tolerance > 0 {
		if age := time.Since(time.Unix(unix, 0)); age > tolerance || age < -tolerance {
			return fmt.Errorf("webhook signature: timestamp is %s away from now, more than the %s tolerance",
				age.Round(time.Second).Abs(), tolerance)
		}
	}
	w := want(ts)
	for _, sig := range sigs {
		if hmac.Equal(sig, w) {
			return nil
		}
	}
	return errors.New("webhook signature: mismatch")
}
