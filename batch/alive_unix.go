//go:build unix

package batch

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid exists: signal 0 checks without sending.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
