package proctest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
)

func writeLog(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "exec.log")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// Each end closes its own run (same attempt and pid); a job started twice
// has two runs, in log order, and only the one that never ended is
// unfinished.
func TestReadExecLogPairsRuns(t *testing.T) {
	path := writeLog(t, "start 1 1 100\nstart 2 1 100\nend 1 1 100\nstart 2 2 200\nend 2 2 200\n")
	l := proctest.ReadExecLog[int64](t, path, true)
	require.Equal(t, 5, l.Lines)
	require.Equal(t, 2, l.Ends)
	require.Len(t, l.Runs[1], 1)
	require.True(t, l.Runs[1][0].Ended)
	require.Len(t, l.Runs[2], 2)
	require.Equal(t, proctest.JobRun{Attempt: 1, PID: 100, Ended: false, Line: 2}, *l.Runs[2][0])
	require.Equal(t, proctest.JobRun{Attempt: 2, PID: 200, Ended: true, Line: 4, EndLine: 5}, *l.Runs[2][1])
	require.Equal(t, []int64{2}, l.Unfinished(100))
	require.Empty(t, l.Unfinished(200))
	require.Equal(t, 2, proctest.CountEnds(path))
}

// A run told to stop ends at its stop line: a run that started before it
// overlapped, one that started after it did not; a run that wrote
// neither line (killed) overlaps nothing.
func TestReadExecLogStoppedRuns(t *testing.T) {
	l := proctest.ReadExecLog[int64](t, writeLog(t,
		"start 1 1 100\nstart 1 2 200\nstop 1 1 100\nend 1 2 200\n"+ // 1: overlapped
			"start 2 1 100\nstop 2 1 100\nstart 2 2 200\nend 2 2 200\n"+ // 2: stopped first
			"start 3 1 100\nstart 3 2 200\nend 3 2 200\n"), true) // 3: killed
	require.Equal(t, proctest.JobRun{Attempt: 1, PID: 100, Stopped: true, Line: 1, EndLine: 3}, *l.Runs[1][0])
	require.Equal(t, 3, l.Ends, "stop lines are not ends")
	require.Equal(t, []int64{3}, l.Unfinished(100))
	overlaps := l.Overlaps()
	require.Contains(t, overlaps, int64(1))
	require.Len(t, overlaps, 1)
}

// Jobs may be told apart by key rather than id.
func TestReadExecLogByKey(t *testing.T) {
	l := proctest.ReadExecLog[string](t, writeLog(t, "start order-7 1 100\nend order-7 1 100\n"), true)
	require.Len(t, l.Runs["order-7"], 1)
	require.True(t, l.Runs["order-7"][0].Ended)
}

// While workers run, a missing log is empty and a line caught mid-write
// is skipped; once they stopped, either is a failure.
func TestReadExecLogWhileRunning(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.log")
	require.Empty(t, proctest.ReadExecLog[int64](t, missing, false).Runs)
	partial := writeLog(t, "start 1 1 100\nend 1 1 1")
	l := proctest.ReadExecLog[int64](t, partial, false)
	require.Equal(t, 1, l.Lines)
	require.False(t, l.Runs[1][0].Ended)

	for _, c := range []struct{ name, path string }{
		{"missing", missing},
		{"partial line", writeLog(t, "start 1 1 100\nend 1 1")},
		{"end without start", writeLog(t, "end 1 1 100\n")},
		{"unknown kind", writeLog(t, "halt 1 1 100\n")},
		{"stop without start", writeLog(t, "stop 1 1 100\n")},
	} {
		ft := &failT{T: t}
		func() {
			defer func() { recover() }()
			proctest.ReadExecLog[int64](ft, c.path, true)
		}()
		require.True(t, ft.failed, "%s: a complete read accepted it", c.name)
	}
}

// failT records a failure instead of failing the test, so that a check
// meant to fail can be seen to.
type failT struct {
	*testing.T
	failed bool
}

func (f *failT) Errorf(string, ...any) { f.failed = true }
func (f *failT) FailNow()              { f.failed = true; panic("FailNow") }
func (f *failT) Fatalf(string, ...any) { f.failed = true; panic("FailNow") }
