//go:build unix

package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/sluicehq/sluice"
)

// progressFD is the command's file descriptor of its progress pipe, which
// SLUICE_PROGRESS_FD names (docs/http-api.md "Handler protocol").
const progressFD = 3

// maxProgressLine bounds one progress line: a report is a few numbers and
// a message of at most sluicetype.MaxProgressMessageLen bytes, so a longer
// line is a mistake, skipped like any other bad line.
const maxProgressLine = 4 << 10

// progressLine is one line of the progress pipe.
type progressLine struct {
	Done    *int64 `json:"done"`
	Total   int64  `json:"total"`
	Message string `json:"message"`
}

// parseProgress reads one line; the error names the field at fault.
func parseProgress(line []byte) (progressLine, error) {
	var l progressLine
	if err := json.Unmarshal(line, &l); err != nil {
		return l, err
	}
	switch {
	case l.Done == nil:
		return l, errors.New(`"done" is missing`)
	case *l.Done < 0:
		return l, errors.New(`"done" is negative`)
	case l.Total < 0:
		return l, errors.New(`"total" is negative`)
	}
	return l, nil
}

// readProgress feeds each line of r to job.Progress until r ends. A bad
// line is skipped and counted, never failing the job: progress is for
// people watching, and a command's report must not decide its outcome.
// The pipe is read to its end whatever it holds, so that a command never
// blocks writing to it.
func readProgress(r io.Reader, job *sluice.Job) {
	br := bufio.NewReaderSize(r, maxProgressLine)
	var bad int
	var firstErr error
	skip := func(err error) {
		bad++
		if firstErr == nil {
			firstErr = err
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			skip(errors.New("line longer than 4 KiB"))
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			if l, perr := parseProgress(line); perr != nil {
				skip(perr)
			} else {
				job.Progress(*l.Done, l.Total, l.Message)
			}
		}
		if err != nil {
			break
		}
	}
	if bad > 0 {
		slog.Debug("command progress lines skipped", "job_id", job.ID, "lines", bad, "first", firstErr)
	}
}
