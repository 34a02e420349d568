package proctest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// LogScript is a command handler that writes "start JOB ATTEMPT PID" and
// "end JOB ATTEMPT PID" lines around a sleep, JOB being the value of the
// environment variable jobVar (SLUICE_JOB_ID, or SLUICE_JOB_KEY where ids
// may be handed out twice). $PPID is the sluice process (the argv runs
// without a shell in between), so a line says which worker ran it. Each
// echo is one short O_APPEND write, so lines land whole.
func LogScript(logPath, jobVar, sleep string) string {
	return fmt.Sprintf(`echo "start $%[3]s $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s; sleep %[2]s; echo "end $%[3]s $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s`, logPath, sleep, jobVar)
}

// JobRun is one run of a job as the execution log saw it.
type JobRun struct {
	Attempt, PID int
	Ended        bool
	Line         int // the line number of its start
}

func (r JobRun) String() string {
	return fmt.Sprintf("{pid %d attempt %d ended %t line %d}", r.PID, r.Attempt, r.Ended, r.Line)
}

// Unfinished lists the jobs that pid started and did not end.
func (l *ExecLog[K]) Unfinished(pid int) []K {
	var jobs []K
	for job, runs := range l.Runs {
		for _, r := range runs {
			if r.PID == pid && !r.Ended {
				jobs = append(jobs, job)
			}
		}
	}
	return jobs
}

// ExecLog is an execution log as read: every run of every job, by the
// job's id (K int64) or key (K string).
type ExecLog[K int64 | string] struct {
	Runs  map[K][]*JobRun
	Lines int // lines read
	Ends  int // end lines
}

// ReadExecLog reads the log LogScript writes at path. While workers run,
// the file may not exist yet and its last line may be caught mid-write
// (it has no newline yet), and is skipped; once they are stopped
// (complete), every line must be whole, parse and end a run that started.
func ReadExecLog[K int64 | string](t testing.TB, path string, complete bool) *ExecLog[K] {
	t.Helper()
	l := &ExecLog[K]{Runs: map[K][]*JobRun{}}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && !complete {
		return l
	}
	require.NoError(t, err)
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			require.True(t, line == "" || !complete, "log line %q cut off", line)
			continue
		}
		var kind string
		var job K
		var attempt, pid int
		if _, err := fmt.Sscanf(line, "%s %v %d %d\n", &kind, &job, &attempt, &pid); err != nil {
			require.False(t, complete, "log line %q: %v", line, err)
			continue
		}
		l.Lines++
		switch kind {
		case "start":
			l.Runs[job] = append(l.Runs[job], &JobRun{Attempt: attempt, PID: pid, Line: l.Lines})
		case "end":
			l.Ends++
			found := false
			for _, r := range l.Runs[job] {
				if r.Attempt == attempt && r.PID == pid && !r.Ended {
					r.Ended, found = true, true
					break
				}
			}
			require.True(t, found || !complete, "end without start: %q", line)
		default:
			require.False(t, complete, "bad log line %q", line)
		}
	}
	return l
}

// CountEnds counts the log's "end" lines so far, cheaply enough to poll.
func CountEnds(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := bytes.Count(b, []byte("\nend "))
	if bytes.HasPrefix(b, []byte("end ")) {
		n++
	}
	return n
}
