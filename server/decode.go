package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

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

// decodeJobs decodes and checks the body of POST /v1/jobs/many: every
// element is checked before any is written, and an error names the
// element's index, such as "[3].key".
func (s *Server) decodeJobs(b []byte) ([]sluice.EnqueueParams, error) {
	reqs, err := sluice.DecodeEnqueueRequests(b)
	if err != nil {
		return nil, err
	}
	ps := make([]sluice.EnqueueParams, len(reqs))
	for i, req := range reqs {
		p, err := req.Params()
		if err == nil {
			// As EnqueueMany will check it, but here the index can be named.
			err = s.client.ValidateEnqueue(p)
		}
		if err != nil {
			var ie *sluice.InputError
			if errors.As(err, &ie) {
				return nil, &sluice.InputError{Field: fmt.Sprintf("[%d].%s", i, ie.Field), Msg: ie.Msg}
			}
			return nil, fmt.Errorf("checking job %d: %w", i, err)
		}
		ps[i] = p
	}
	return ps, nil
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

// intParams reads several integer query parameters with queryInt and keeps
// the first error, so that a handler checks once after reading them all.
type intParams struct {
	r   *http.Request
	err error
}

// get is queryInt's value of name, or 0 once a parameter was refused.
func (p *intParams) get(name string, def, min, max int64) int64 {
	if p.err != nil {
		return 0
	}
	n, err := queryInt(p.r, name, def, min, max)
	p.err = err
	return n
}
