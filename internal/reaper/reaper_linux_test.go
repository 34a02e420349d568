package reaper

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/reaper/supervise"
)

// runSupervisor starts this test binary as a supervisor (init takes it
// over by its argv[0]) told that its parent is parent, with a command that
// creates the file ran, and returns the supervisor's first report line.
func runSupervisor(t *testing.T, parent int, ran string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sup := &exec.Cmd{Path: "/proc/self/exe",
		Args:       []string{supervise.Marker, "1s", strconv.Itoa(parent), "0", "/bin/sh", "sh", "-c", "touch " + ran},
		ExtraFiles: []*os.File{w}}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	sup.Wait()
	return line
}

// A supervisor whose parent died before it could catch the parent-death
// signal starts nothing: the signal does not end it by itself when SIGHUP
// is inherited ignored (nohup), and its command would have run on with no
// one to stop it. Here the parent it is told of is not its parent, as
// after such a death.
func TestSupervisorOfAGoneParentStartsNothing(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	line := runSupervisor(t, os.Getpid()+1, ran)
	if !strings.HasPrefix(line, "error ") || !strings.Contains(line, "is gone; the command was not started") {
		t.Fatalf("report %q, want the gone parent", line)
	}
	// runSupervisor waited for the supervisor, which exits only once no
	// descendant is left: had it started the command, the file would be
	// there now.
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran")
	}

	// With its real parent it runs the command (done by the same wait).
	if line := runSupervisor(t, os.Getpid(), ran); !strings.HasPrefix(line, "started ") {
		t.Fatalf("report %q, want started", line)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
}
