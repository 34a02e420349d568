package proctest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/proctest"
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
	require.Equal(t, proctest.JobRun{Attempt: 2, PID: 200, Ended: true, Line: 4}, *l.Runs[2][1])
	require.Equal(t, []int64{2}, l.Unfinished(100))
	require.Empty(t, l.Unfinished(200))
	require.Equal(t, 2, proctest.CountEnds(path))
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
		{"unknown kind", writeLog(t, "stop 1 1 100\n")},
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
