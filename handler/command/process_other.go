//go:build !unix

package command

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/sluicehq/sluice"
)

// run fails: a command's process tree can only be stopped as a whole
// through a Unix process group.
func (h *Handler) run(context.Context, []byte, *sluice.Job, io.Writer, io.Writer) (*os.ProcessState, bool, error) {
	return nil, false, errors.New("command handlers need a Unix system")
}
