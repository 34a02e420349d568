//go:build !unix

package command

import (
	"context"
	"errors"
	"io"

	"github.com/sluicehq/sluice"
)

// run fails: a command's process tree can only be stopped as a whole
// through a Unix process group.
func (h *Handler) run(context.Context, []byte, *sluice.Job, io.Writer, io.Writer) (ending, bool, error) {
	return ending{}, false, errors.New("command handlers need a Unix system")
}
