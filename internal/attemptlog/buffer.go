package attemptlog

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Buffer keeps an attempt's log, its first sluicetype.MaxLogHead bytes
// and last MaxLogTail bytes, in the order writes came in. Several
// goroutines may write it (a command's stdout and stderr readers, a Go
// handler's goroutines through its job logger), so it locks.
type Buffer struct {
	mu    sync.Mutex
	head  []byte
	tail  *Tail
	total int64
}

// New returns an empty Buffer.
func New() *Buffer {
	return &Buffer{head: make([]byte, 0, sluicetype.MaxLogHead), tail: NewTail(sluicetype.MaxLogTail)}
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	n := min(len(p), cap(l.head)-len(l.head))
	l.head = append(l.head, p[:n]...)
	if n < len(p) {
		l.tail.Write(p[n:])
	}
	return len(p), nil
}

// Log returns the kept text, the bytes written in all and how many of them
// the text leaves out. Where bytes were left out, a marker line says how
// many. Invalid UTF-8 and NUL bytes are replaced by driver.StorableText,
// the rule that every stored output follows.
func (l *Buffer) Log() (text string, total, omitted int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	head, tail := l.head, l.tail.buf
	omitted = l.total - int64(len(head)) - int64(len(tail))
	if omitted == 0 {
		return driver.StorableText(string(head)+string(tail), sluicetype.MaxLogHead+sluicetype.MaxLogTail, false), l.total, 0
	}
	// Neither cut may leave half a character behind.
	head = head[:len(head)-partialRuneEnd(head)]
	t := l.tail.String()
	omitted = l.total - int64(len(head)) - int64(len(t))
	marker := "[sluice: " + strconv.FormatInt(omitted, 10) + " bytes left out]\n"
	if len(head) > 0 && head[len(head)-1] != '\n' {
		marker = "\n" + marker
	}
	return driver.StorableText(string(head), sluicetype.MaxLogHead, false) + marker +
		driver.StorableText(t, sluicetype.MaxLogTail, true), l.total, omitted
}

// partialRuneEnd is the length of an incomplete UTF-8 sequence at the end
// of b, 0 when there is none.
func partialRuneEnd(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if c := b[len(b)-i]; c&0xC0 != 0x80 {
			// A start byte (or ASCII): is its sequence complete?
			if c >= 0xC0 && !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}
