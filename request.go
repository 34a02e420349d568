package sluice

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/dur"
)

// EnqueueRequest is one job as JSON spells it: the body of POST /v1/jobs, an
// element of POST /v1/jobs/many, and a line of `sluice enqueue --ndjson`.
// Decode it with DecodeEnqueueRequest, which refuses what encoding/json would
// let through silently.
type EnqueueRequest struct {
	Type     string          `json:"type"`
	Key      string          `json:"key"`
	Payload  json.RawMessage `json:"payload"`
	Queue    string          `json:"queue"`
	Priority int             `json:"priority"`
	Delay    string          `json:"delay"`    // "30s", "2h", "7d"
	RunAt    string          `json:"run_at"`   // RFC 3339
	Deadline string          `json:"deadline"` // RFC 3339
	// ProgressTimeout is the job's own progress timeout, as delay spells
	// a duration ("90s", "5m").
	ProgressTimeout string `json:"progress_timeout"`
	MaxAttempts     int    `json:"max_attempts"`
	Dedupe          string `json:"dedupe"`
	Partition       string `json:"partition"`
}

// DecodeEnqueueRequest decodes one job request, strictly: field names exactly
// as documented (case-sensitive), each at most once, no unknown fields,
// and text that is valid UTF-8 without lone surrogates anywhere in b.
// encoding/json would match "Type" to type, keep the last of a repeated
// field and turn "\ud800" or a 0xFF byte into U+FFFD, so that what is
// stored is not what was sent. Errors are *InputError values naming the
// field.
func DecodeEnqueueRequest(b []byte) (EnqueueRequest, error) {
	var r EnqueueRequest
	return r, decodeStrict(b, &r, "object")
}

// DecodeEnqueueRequests decodes a JSON array of job requests (the body of POST
// /v1/jobs/many) as DecodeEnqueueRequest does; a field is named with its
// index, such as "[3].key".
func DecodeEnqueueRequests(b []byte) ([]EnqueueRequest, error) {
	var rs []EnqueueRequest
	return rs, decodeStrict(b, &rs, "array of job objects")
}

func decodeStrict(b []byte, v any, want string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return inputErr("body", "empty; want a JSON %s", want)
	}
	// The text first, so that a truncated body or a second value is blamed
	// on the body, then the fields.
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	_, err := dec.ReadValue()
	if err == nil {
		if _, err := dec.ReadToken(); err != io.EOF {
			return inputErr("body", "must hold exactly one JSON value")
		}
		err = jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
	}
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return inputErr("body", "not valid JSON text: it ends before the value does")
	case errors.As(err, &syn):
		return inputErr(fieldOf(syn.JSONPointer), "not valid JSON text at byte offset %d: %v", syn.ByteOffset, syn.Err)
	case errors.As(err, &sem):
		field := fieldOf(sem.JSONPointer)
		switch {
		case errors.Is(sem.Err, jsonv2.ErrUnknownName):
			return inputErr(field, "unknown field (field names are case-sensitive)")
		case sem.JSONKind == '0' && sem.GoType != nil && sem.GoType.Kind() == reflect.Int:
			return inputErr(field, "%s is not an integer in range", rawValueAt(b, sem.ByteOffset))
		case sem.GoType != nil:
			return inputErr(field, "want %s, got %s", goKindName(sem.GoType.Kind()), jsonKindName(sem.JSONKind))
		}
	}
	return inputErr("body", "not a JSON %s: %v", want, err)
}

// rawValueAt returns the JSON number that starts at or after off in b, for
// a message; the decoder's error does not carry it.
func rawValueAt(b []byte, off int64) string {
	if off < 0 || off > int64(len(b)) {
		return "the number"
	}
	rest := bytes.TrimLeft(b[off:], " \t\r\n:")
	n := 0
	for n < len(rest) && n < 40 && strings.IndexByte("+-0123456789.eE", rest[n]) >= 0 {
		n++
	}
	if n == 0 {
		return "the number"
	}
	return string(rest[:n])
}

// goKindName says what JSON a Go field of kind k takes, for a message.
func goKindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return k.String()
}

// Params converts the request. Errors are *InputError values naming the
// field; the rest of the checking happens when the job is enqueued.
func (r EnqueueRequest) Params() (EnqueueParams, error) {
	p := EnqueueParams{Type: r.Type, Key: r.Key, Queue: r.Queue, Priority: r.Priority,
		MaxAttempts: r.MaxAttempts, Dedupe: r.Dedupe, Partition: r.Partition}
	if len(r.Payload) > 0 {
		p.Payload = r.Payload
	}
	if r.Delay != "" {
		d, err := dur.Parse(r.Delay)
		if err != nil {
			return p, inputErr("delay", "%v", err)
		}
		p.Delay = d
	}
	if r.RunAt != "" {
		t, err := time.Parse(time.RFC3339Nano, r.RunAt)
		if err != nil {
			return p, inputErr("run_at", "%q is not an RFC 3339 time such as 2025-01-02T15:04:05Z", r.RunAt)
		}
		// Checked here as well as in prepare: year 1 is time.Time's zero,
		// which EnqueueParams reads as "no run_at".
		if err := checkTime("run_at", t); err != nil {
			return p, err
		}
		p.RunAt = t
	}
	if r.Deadline != "" {
		t, err := time.Parse(time.RFC3339Nano, r.Deadline)
		if err != nil {
			return p, inputErr("deadline", "%q is not an RFC 3339 time such as 2025-01-02T15:04:05Z", r.Deadline)
		}
		// As run_at: year 1 would read as "no deadline".
		if err := checkTime("deadline", t); err != nil {
			return p, err
		}
		p.Deadline = t
	}
	if r.ProgressTimeout != "" {
		d, err := dur.Parse(r.ProgressTimeout)
		if err != nil {
			return p, inputErr("progress_timeout", "%v", err)
		}
		// Here, not only in prepare: "0s" would read as "the type's".
		if err := checkProgressTimeout(d); err != nil {
			return p, err
		}
		p.ProgressTimeout = d
	}
	return p, nil
}
