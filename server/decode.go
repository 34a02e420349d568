package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice"
)

// requestError is bad input: the status and the message naming the field.
type requestError struct {
	code int
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// readBody reads the whole body under the size limit, so that a syntax
// error can be located afterwards and an oversized body is refused before
// any of it is used.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &requestError{code: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("body: larger than the limit of %d bytes", mbe.Limit)}
		}
		return nil, badRequest("body: cannot read: %v", err)
	}
	return b, nil
}

// decodeStrict decodes exactly one JSON value from b into v, refusing
// unknown fields. prefix goes before field names in errors ("[3]." in a batch).
func decodeStrict(b []byte, v any, prefix string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("%s: empty; want a JSON value", orBody(prefix))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(b, err, prefix)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("%s: must hold exactly one JSON value", orBody(prefix))
	}
	return nil
}

func orBody(prefix string) string {
	if p := strings.TrimSuffix(prefix, "."); p != "" {
		return p
	}
	return "body"
}

// describeJSONError turns a decoding error into a message naming the field.
func describeJSONError(b []byte, err error, prefix string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		if path := pathAt(b); path != "" {
			return badRequest("%s%s: not valid JSON (offset %d): %v", prefix, path, se.Offset, se)
		}
		return badRequest("%s: malformed JSON (offset %d): %v", orBody(prefix), se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("%s: malformed JSON: unexpected end", orBody(prefix))
	case errors.As(err, &te):
		if te.Field == "" {
			return badRequest("%s: want a JSON %s, got %s", orBody(prefix), jsonKind(te.Type.Kind().String()), te.Value)
		}
		return badRequest("%s%s: want a %s, got %s", prefix, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("%s%s: unknown field", prefix, strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	}
	return badRequest("%s: malformed JSON: %v", orBody(prefix), err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64":
		return "number"
	case "struct", "map":
		return "object"
	case "slice":
		return "array"
	}
	return goKind
}

// pathAt walks the tokens of b up to its syntax error and returns the path
// of the value being read there, such as "payload" or "[3].payload", so that
// a payload that is not JSON is reported against its field.
func pathAt(b []byte) string {
	type frame struct {
		array bool
		index int
		key   string
		// wantKey is true in an object when the next string is a key.
		wantKey bool
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(b))
	path := func() string {
		var sb strings.Builder
		for _, f := range stack {
			switch {
			case f.array:
				fmt.Fprintf(&sb, "[%d]", f.index)
			case f.key != "" && !f.wantKey: // between fields, no field is being read
				if sb.Len() > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString(f.key)
			}
		}
		return sb.String()
	}
	// valueDone advances the enclosing container after one value.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return path()
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{wantKey: true})
			case '[':
				stack = append(stack, frame{array: true})
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// jobParams converts a decoded job; prefix names its place in a batch.
func jobParams(req *sluice.JobRequest, prefix string) (sluice.EnqueueParams, error) {
	p, err := req.Params()
	var ie *sluice.InputError
	if errors.As(err, &ie) {
		return p, badRequest("%s%s", prefix, ie.Error())
	}
	return p, err
}

// queryInt reads an optional integer query parameter of at least min.
func queryInt(r *http.Request, name string, def, min, max int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badRequest("%s: %q is not an integer", name, v)
	}
	if n < min || n > max {
		return 0, badRequest("%s: %d is out of range [%d, %d]", name, n, min, max)
	}
	return n, nil
}
