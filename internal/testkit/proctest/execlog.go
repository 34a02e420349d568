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
// may be handed out twice). $SLUICE_WORKER_PID is the sluice process, so
// a line says which worker ran it. Each echo is one short O_APPEND write,
// so lines land whole.
func LogScript(logPath, jobVar, sleep string) string {
	return fmt.Sprintf(`echo "start $%[3]s $SLUICE_JOB_ATTEMPT $SLUICE_WORKER_PID" >> %[1]s; sleep %[2]s; echo "end $%[3]s $SLUICE_JOB_ATTEMPT $SLUICE_WORKER_PID" >> %[1]s`, logPath, sleep, jobVar)
}

// JobRun is one run of a job as the execution log saw it.
type JobRun struct {
	Attempt, PID int
	Ended        bool // it wrote its end line: it finished its work
	Stopped      bool // it wrote a stop line: it was told to stop (StoppableLogScript)
	Line         int  // the line number of its start
	EndLine      int  // the line number of its end or stop line
}

func (r JobRun) String() string {
	return fmt.Sprintf("{pid %d attempt %d ended %t stopped %t line %d end %d}", r.PID, r.Attempt, r.Ended, r.Stopped, r.Line, r.EndLine)
}

// Overlaps lists the jobs two of whose runs overlapped: a run started
// before an earlier one's end or stop line. Lines are appended in the
// order they were written, so the log orders them in time; a run that
// wrote neither (its process was killed) overlaps nothing after it.
func (l *ExecLog[K]) Overlaps() map[K][]*JobRun {
	out := map[K][]*JobRun{}
	for job, runs := range l.Runs {
		for i, a := range runs {
			for _, b := range runs[i+1:] {
				if (a.Ended || a.Stopped) && a.EndLine > b.Line {
					out[job] = runs
				}
			}
		}
	}
	return out
}

// Unfinished lists the jobs that pid started and did not end.
func (l *ExecLog[K]) Unfinished(pid int) []K {
	var jobs []K
	for job, runs := range l.Runs {
		for _, r := range runs {
			if r.PID == pid && !r.Ended && !r.Stopped {
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
		case "end", "stop":
			if kind == "end" {
				l.Ends++
			}
			found := false
			for _, r := range l.Runs[job] {
				if r.Attempt == attempt && r.PID == pid && !r.Ended && !r.Stopped {
					r.Ended, r.Stopped = kind == "end", kind == "stop"
					r.EndLine, found = l.Lines, true
					break
				}
			}
			require.True(t, found || !complete, "%s without start: %q", kind, line)
		default:
			require.False(t, complete, "bad log line %q", line)
		}
	}
	return l
}

// StoppableLogScript is LogScript for a command that may be told to stop:
// on SIGTERM it writes "stop JOB ATTEMPT PID" and exits 143, so that the
// log shows when a stopped run ended (the sleep runs in the background
// and is waited for, so that the trap fires at once, not when the sleep
// ends; the signal reaches the sleep too, as sluice signals the whole
// process group). The trap is set after the start line, so that a stop
// line always has its start; a run stopped in between dies without a
// line, as a killed one does. The trap ignores a second SIGTERM: the
// command supervisor signals the group and each process of the tree,
// and a second run of the trap wrote a second stop line.
func StoppableLogScript(logPath, jobVar, sleep string) string {
	return fmt.Sprintf(`echo "start $%[3]s $SLUICE_JOB_ATTEMPT $SLUICE_WORKER_PID" >> %[1]s; trap 'trap "" TERM; echo "stop $%[3]s $SLUICE_JOB_ATTEMPT $SLUICE_WORKER_PID" >> %[1]s; exit 143' TERM; sleep %[2]s & wait $!; echo "end $%[3]s $SLUICE_JOB_ATTEMPT $SLUICE_WORKER_PID" >> %[1]s`, logPath, sleep, jobVar)
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
