//go:build !unix

package cli

import (
	"errors"
	"os"
)

var forwardedSignals = []os.Signal{os.Interrupt}

// runLocked fails: CMD's process tree can only be stopped as a whole
// through a Unix process group.
func runLocked(*app, []string, []string, lockOptions, <-chan os.Signal, <-chan error) lockRun {
	return lockRun{startErr: errors.New("running CMD under a lock needs a Unix system")}
}
