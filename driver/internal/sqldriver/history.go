package sqldriver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// storedAttempt is an Attempt as stored: times are text, because each
// database writes End in its own format.
type storedAttempt struct {
	Number     int                `json:"attempt"`
	Node       string             `json:"node,omitempty"`
	Start      string             `json:"start,omitempty"`
	End        string             `json:"end,omitempty"`
	Outcome    sluicetype.Outcome `json:"outcome"`
	Error      string             `json:"error,omitempty"`
	HTTPStatus int                `json:"http_status,omitempty"`
	ExitCode   *int               `json:"exit_code,omitempty"`
	Progress   *storedProgress    `json:"progress,omitempty"`
}

// storedProgress is an attempt's last progress report in its history
// entry; the entry's end stands for when it was made.
type storedProgress struct {
	Done    int64  `json:"done"`
	Total   int64  `json:"total"`
	Message string `json:"message,omitempty"`
}

// EncodeAttempt is the history entry a driver appends for a, without End,
// which the completing statement adds from the database clock. The error
// passes through StorableText, cut to MaxAttemptErrorLen keeping its end.
func EncodeAttempt(a *sluicetype.Attempt) string {
	s := storedAttempt{Number: a.Number, Node: a.Node, Outcome: a.Outcome, HTTPStatus: a.HTTPStatus, ExitCode: a.ExitCode,
		Error: driver.StorableText(a.Error, driver.MaxAttemptErrorLen, true)}
	if p := a.Progress; p != nil {
		s.Progress = &storedProgress{Done: p.Done, Total: p.Total,
			Message: driver.StorableText(p.Message, sluicetype.MaxProgressMessageLen, false)}
	}
	if !a.Start.IsZero() {
		s.Start = a.Start.UTC().Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(s)
	if err != nil {
		// Every field is a string or a number.
		panic(fmt.Sprintf("encode attempt: %v", err))
	}
	return string(b)
}

// DecodeHistory reads a history column; NULL or empty is no history.
func DecodeHistory(b []byte) ([]sluicetype.Attempt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var stored []storedAttempt
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, fmt.Errorf("decode attempt history: %w", err)
	}
	out := make([]sluicetype.Attempt, len(stored))
	for i, s := range stored {
		a := sluicetype.Attempt{Number: s.Number, Node: s.Node, Outcome: s.Outcome, Error: s.Error, HTTPStatus: s.HTTPStatus, ExitCode: s.ExitCode}
		if p := s.Progress; p != nil {
			a.Progress = &sluicetype.Progress{Done: p.Done, Total: p.Total, Message: p.Message}
		}
		for _, t := range []struct {
			text string
			dst  *time.Time
		}{{s.Start, &a.Start}, {s.End, &a.End}} {
			if t.text == "" {
				continue
			}
			var v Time
			if err := v.parse(t.text); err != nil {
				return nil, fmt.Errorf("decode attempt history: %w", err)
			}
			*t.dst = v.Time
		}
		out[i] = a
	}
	return out, nil
}
