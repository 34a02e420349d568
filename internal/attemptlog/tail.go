// Package attemptlog keeps what an attempt writes within a fixed memory
// bound: its first and last bytes, the way every handler kind's attempt
// log is kept (the command handler's output, a Go handler's job logger).
package attemptlog

// Tail keeps the last max bytes written to it, so a command that
// prints gigabytes costs a bounded amount of memory. It is written by one
// goroutine and read only after that goroutine is done.
type Tail struct {
	max       int
	buf       []byte
	truncated bool
}

// NewTail returns a Tail that keeps the last max bytes.
func NewTail(max int) *Tail {
	return &Tail{max: max, buf: make([]byte, 0, max)}
}

func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.truncated = t.truncated || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.truncated = true
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept bytes as text. A cut can split a UTF-8
// sequence at the start, so the partial rune is dropped there.
func (t *Tail) String() string {
	b := t.buf
	if t.truncated {
		for i := 0; i < 3 && len(b) > 0 && b[0]&0xC0 == 0x80; i++ {
			b = b[1:]
		}
	}
	return string(b)
}
