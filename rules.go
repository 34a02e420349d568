package sluice

// The rules of a job request, in one place: every path that enqueues (the
// HTTP API, the CLI, `sluice import`, the Go client, typed args) reaches
// them through Client.prepare, and testdata/enqueue_rules.json drives them
// (enqueue_rules_test.go, and the PHP library's copy of the rules). A
// broken rule is an *InputError naming the field. The names sluice stores
// in a column of limited width follow sluicetype.CheckName and
// sluicetype.CheckPartition, which the drivers and the lock package apply
// too.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Limits of a job request, the same on every path (API, CLI, Go) and every
// database, as docs/reference.md "Job request rules" states them; the
// column widths are sluicetype.MaxTypeLen and its neighbours.
const (
	// MaxPayloadBytes bounds a payload's JSON text.
	MaxPayloadBytes = 1 << 20
	// MaxPayloadDepth bounds a payload's nesting: objects and arrays, the
	// payload object itself counting as one. MariaDB's JSON check refuses
	// 32 (its JSON_DEPTH_LIMIT); MySQL stops at 100, PostgreSQL and SQLite
	// go deeper.
	MaxPayloadDepth = 31
	// MaxMaxAttempts is the largest max_attempts: the column is a 32-bit
	// INTEGER on every database.
	MaxMaxAttempts = math.MaxInt32
	// MinPriority and MaxPriority bound priority: a SMALLINT column.
	MinPriority = math.MinInt16
	MaxPriority = math.MaxInt16
)

// minRunAt and maxRunAt bound run_at and deadline: MariaDB's DATETIME ends with year
// 9999, and an earlier time than 1970 is surely a mistake (year 1 is Go's
// zero time, which would otherwise mean "now").
var (
	minRunAt = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxRunAt = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// checkTime checks the time of field (run_at or deadline) against them.
func checkTime(field string, t time.Time) error {
	if t.Before(minRunAt) || t.After(maxRunAt) {
		return inputErr(field, "%s is out of range: want %s to %s", t.Format(time.RFC3339Nano),
			minRunAt.Format(time.RFC3339), maxRunAt.Format(time.RFC3339))
	}
	return nil
}

// checkProgressTimeout is the rule for a job's own progress timeout,
// when one is given: positive (EnqueueParams reads zero as the type's).
func checkProgressTimeout(d time.Duration) error {
	if d <= 0 {
		return inputErr("progress_timeout", "must be positive, got %s", d)
	}
	return nil
}

// checkDeadline is the rule for a job's own deadline: within run_at's
// range, in the future and after the job is due (its run_at, or now plus
// its delay), by the enqueuing process's clock now. A claim starts a job
// only while next_run_at <= now < deadline, so a job that could never
// start is refused rather than enqueued to be cancelled.
func checkDeadline(row driver.InsertJob, now time.Time) error {
	if row.Deadline.IsZero() {
		return nil
	}
	if err := checkTime("deadline", row.Deadline); err != nil {
		return err
	}
	dl := row.Deadline.Format(time.RFC3339Nano)
	due := row.RunAt
	if due.IsZero() {
		due = now.Add(row.Delay)
	}
	switch {
	case !row.Deadline.After(now):
		return inputErr("deadline", "%s is in the past: the job could never start", dl)
	case !row.Deadline.After(due):
		return inputErr("deadline", "%s is not after the job is due (%s): it could never start", dl, due.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// checkKey is the rule for a business key: "" for none, or up to
// sluicetype.MaxKeyLen characters (counted as the databases count them, not
// in bytes) of valid UTF-8 without NUL, which PostgreSQL refuses in text
// and a command handler cannot pass in its environment.
func checkKey(k string) error {
	switch {
	case !utf8.ValidString(k):
		return inputErr("key", "not valid UTF-8")
	case utf8.RuneCountInString(k) > sluicetype.MaxKeyLen:
		return inputErr("key", "%d characters, at most %d allowed", utf8.RuneCountInString(k), sluicetype.MaxKeyLen)
	case strings.IndexByte(k, 0) >= 0:
		return inputErr("key", "contains a NUL character")
	}
	return nil
}

func encodePayload(v any) ([]byte, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, inputErr("payload", "cannot encode as JSON: %v", err)
		}
	}
	// Empty and null are the default {}, as an absent payload is.
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}"), nil
	}
	if err := checkPayload(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkPayload is the one rule for a payload, whichever path it came by:
// a JSON object of at most MaxPayloadBytes and MaxPayloadDepth levels,
// valid UTF-8 without lone surrogates, each member name once per object,
// no NUL character in any string (PostgreSQL's jsonb refuses \u0000) and
// every number within a 64-bit float's range (jsonb refuses 1e1000000).
// Every database stores such a payload, and stores it the same.
func checkPayload(b []byte) error {
	if len(b) > MaxPayloadBytes {
		return inputErr("payload", "%d bytes, at most %d allowed", len(b), MaxPayloadBytes)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	tok, err := dec.ReadToken()
	if err != nil {
		return payloadSyntaxError(err)
	}
	switch tok.Kind() {
	case '{':
	case '"':
		if s := strings.TrimSpace(tok.String()); (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) && json.Valid([]byte(s)) {
			return inputErr("payload", "a JSON string that holds JSON: it looks double-encoded; send the object itself")
		}
		return inputErr("payload", "must be a JSON object, got a string")
	default:
		return inputErr("payload", "must be a JSON object, got %s", jsonKindName(tok.Kind()))
	}
	for dec.StackDepth() > 0 {
		tok, err := dec.ReadToken()
		if err != nil {
			return payloadSyntaxError(err)
		}
		switch tok.Kind() {
		case '{', '[':
			if dec.StackDepth() > MaxPayloadDepth {
				return inputErr("payload", "nested deeper than %d levels of objects and arrays (at %s)", MaxPayloadDepth, fieldOf(prefixed(dec.StackPointer())))
			}
		case '"':
			if strings.IndexByte(tok.String(), 0) >= 0 {
				// A member name is read as a string token too (an odd count
				// in its object); it is reported against its object.
				at, what := dec.StackPointer(), "value"
				if k, n := dec.StackIndex(dec.StackDepth()); k == '{' && n%2 == 1 {
					at, what = at.Parent(), "member name"
				}
				return inputErr(fieldOf(prefixed(at)), "a %s contains a NUL character (\\u0000), which PostgreSQL cannot store", what)
			}
		case '0':
			if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
				return inputErr(fieldOf(prefixed(dec.StackPointer())), "the number %s is out of range: want one a 64-bit float holds", tok.String())
			}
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return inputErr("payload", "must hold exactly one JSON value")
	}
	return nil
}

// prefixed roots a pointer inside the payload at the payload field.
func prefixed(p jsontext.Pointer) jsontext.Pointer { return "/payload" + p }

func payloadSyntaxError(err error) error {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return inputErr(fieldOf(prefixed(syn.JSONPointer)), "not valid JSON text at byte offset %d: %v", syn.ByteOffset, syn.Err)
	}
	return inputErr("payload", "not valid JSON: %v", err)
}

// InputError is bad input from a caller: it names the field and nothing was
// written. The CLI exits 2 and the HTTP API answers 400 on it.
type InputError struct {
	Field string
	Msg   string
}

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkName applies sluicetype.CheckName and names the field in the error.
func checkName(field, v string, maxLen int) error {
	if err := sluicetype.CheckName(v, maxLen); err != nil {
		return inputErr(field, "%v", err)
	}
	return nil
}

// fieldOf names the value at a JSON pointer the way messages name fields:
// "/3/payload/a/0" becomes "[3].payload.a[0]"; "" is the whole body. A
// pointer does not say whether a number is an array index or an object's
// member name; it is shown as an index, the likelier of the two.
func fieldOf(p jsontext.Pointer) string {
	var sb strings.Builder
	for tok := range p.Tokens() {
		if n, err := strconv.ParseUint(tok, 10, 31); err == nil && strconv.FormatUint(n, 10) == tok {
			fmt.Fprintf(&sb, "[%s]", tok)
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
	}
	if sb.Len() == 0 {
		return "body"
	}
	return sb.String()
}

// jsonKindName says what a JSON value of kind k is, for a message.
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an invalid value"
}

// checkJob applies the rules to a job request whose type's defaults are
// filled in (row), and returns its payload encoded. p is the request as
// given, which an error quotes.
// now is the enqueuing process's clock, which a deadline is checked
// against.
func checkJob(p EnqueueParams, row driver.InsertJob, now time.Time) ([]byte, error) {
	switch {
	case row.MaxAttempts < 1 || row.MaxAttempts > MaxMaxAttempts:
		return nil, inputErr("max_attempts", "%d is out of range: want 1 to %d, or 0 for the type's default", p.MaxAttempts, MaxMaxAttempts)
	case row.Priority < MinPriority || row.Priority > MaxPriority:
		return nil, inputErr("priority", "%d is out of range: want %d to %d", row.Priority, MinPriority, MaxPriority)
	case row.Dedupe != sluicetype.DedupePermanent && row.Dedupe != sluicetype.DedupeActive:
		return nil, inputErr("dedupe", "%q: want permanent or active", row.Dedupe)
	case row.Delay < 0:
		return nil, inputErr("delay", "must not be negative")
	case !row.RunAt.IsZero() && row.Delay != 0:
		return nil, inputErr("run_at", "give run_at or delay, not both")
	}
	if !row.RunAt.IsZero() {
		if err := checkTime("run_at", row.RunAt); err != nil {
			return nil, err
		}
	}
	if err := checkDeadline(row, now); err != nil {
		return nil, err
	}
	if p.ProgressTimeout != 0 {
		if err := checkProgressTimeout(p.ProgressTimeout); err != nil {
			return nil, err
		}
	}
	if err := checkKey(p.Key); err != nil {
		return nil, err
	}
	if err := checkName("queue", row.Queue, sluicetype.MaxQueueLen); err != nil {
		return nil, err
	}
	if err := sluicetype.CheckPartition(row.Partition); err != nil {
		return nil, inputErr("partition", "%v", err)
	}
	return encodePayload(p.Payload)
}
