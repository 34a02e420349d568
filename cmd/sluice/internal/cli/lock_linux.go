package cli

import (
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/reaper"
)

// On Linux CMD runs under the supervisor that `sluice work` gives its
// commands (internal/reaper): when sluice dies, even by SIGKILL or the OOM
// killer, CMD and every process it started are killed, so that none runs
// on without the lock; what CMD leaves behind when it exits is killed too.
func init() { startCMD = startSupervised }

func startSupervised(c *exec.Cmd, killAfter time.Duration) (int, <-chan struct{}, func() (int, error), error) {
	if strings.Contains(c.Path, "/") {
		// The supervisor reports a failed exec as text: look first, so
		// that a missing CMD still exits 127 and one that cannot run 126.
		if _, err := os.Stat(c.Path); err != nil {
			return 0, nil, nil, err
		}
	}
	p, err := reaper.Start(c, killAfter)
	if err != nil {
		return 0, nil, nil, err
	}
	return p.Pid, p.Done(), func() (int, error) {
		ws, err := p.Status()
		if err != nil {
			return exitRuntime, err // the supervisor died without a report
		}
		return waitCode(ws), nil
	}, nil
}
