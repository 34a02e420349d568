//go:build unix

package command_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/sluicetype"
)

// A short run's log is all of stdout and stderr, each stream in order,
// whatever the outcome; invalid UTF-8 and NUL bytes are replaced.
func TestLogKeepsBothStreams(t *testing.T) {
	job := testJob()
	err := shell(t, `echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf 'bad\000\377\n'; exit 3`,
		command.Config{}).Work(context.Background(), job)
	require.Error(t, err)
	l, ok := job.AttemptLog()
	require.True(t, ok, "a failed attempt keeps its log")
	require.Equal(t, int64(len("out1\nerr1\nout2\nerr2\nbad\x00\xff\n")), l.Bytes)
	require.Zero(t, l.Omitted)
	require.Contains(t, l.Text, "bad\uFFFD\uFFFD\n")
	lines := strings.Split(l.Text, "\n")
	require.Less(t, slices.Index(lines, "out1"), slices.Index(lines, "out2"))
	require.Less(t, slices.Index(lines, "err1"), slices.Index(lines, "err2"))
	require.NotContains(t, l.Text, "[sluice:")

	job = testJob()
	require.NoError(t, shell(t, `true`, command.Config{}).Work(context.Background(), job))
	_, ok = job.AttemptLog()
	require.False(t, ok, "an attempt that wrote nothing stores no log")
}

// A long run keeps the first 32 KiB and the last 32 KiB, with a marker
// line saying how many bytes were left out between. The command writes
// 1 MB of stdout and then 1 MB of stderr: it cannot write stderr before
// nearly all of its stdout has been read (the pipe holds 64 KiB), so the
// head is stdout's start and the tail stderr's end.
func TestLogKeepsHeadAndTail(t *testing.T) {
	job := testJob()
	h := shell(t, `echo OUT-START; yes o | head -n 500000; echo OUT-END; yes e | head -n 500000 >&2; echo ERR-END >&2`,
		command.Config{})
	require.NoError(t, h.Work(context.Background(), job))
	l, ok := job.AttemptLog()
	require.True(t, ok)

	total := int64(len("OUT-START\n") + 1_000_000 + len("OUT-END\n") + 1_000_000 + len("ERR-END\n"))
	require.Equal(t, total, l.Bytes)
	require.Equal(t, total-sluicetype.MaxLogHead-sluicetype.MaxLogTail, l.Omitted)
	marker := fmt.Sprintf("[sluice: %d bytes left out]\n", l.Omitted)
	head, tail, found := strings.Cut(l.Text, marker)
	require.True(t, found, "the marker line is there: %q", marker)
	require.Len(t, head, sluicetype.MaxLogHead)
	require.Len(t, tail, sluicetype.MaxLogTail)
	require.True(t, strings.HasPrefix(head, "OUT-START\no\no\n"))
	require.Zero(t, strings.Count(head, "e"), "the head is stdout's")
	require.True(t, strings.HasSuffix(tail, "e\ne\nERR-END\n"))
	require.Zero(t, strings.Count(tail, "o"), "the tail is stderr's")
}

// A cut inside a multi-byte character drops the partial character rather
// than storing a replacement for half of it.
func TestLogCutsOnCharacters(t *testing.T) {
	job := testJob()
	// "é" is 2 bytes; one byte of "x" first makes the 32 KiB head end
	// inside a character.
	require.NoError(t, shell(t, `printf x; yes é | head -n 100000 | tr -d '\n'`, command.Config{}).Work(context.Background(), job))
	l, ok := job.AttemptLog()
	require.True(t, ok)
	require.NotContains(t, l.Text, "\uFFFD")
	require.Equal(t, int64(1+200000), l.Bytes)
	head, tail, found := strings.Cut(l.Text, fmt.Sprintf("\n[sluice: %d bytes left out]\n", l.Omitted))
	require.True(t, found)
	require.Equal(t, l.Bytes-l.Omitted, int64(len(head)+len(tail)))
}
