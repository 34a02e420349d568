//go:build !linux

package reaper

import (
	"os/exec"
	"time"
)

type supervisor struct{}

// Supported reports whether Start can supervise a command here.
func Supported() bool { return false }

// Start fails: only Linux has both a parent-death signal and subreapers.
func Start(*exec.Cmd, time.Duration) (*Process, error) { return nil, ErrUnsupported }

// Stop does nothing: no Process exists here.
func (p *Process) Stop() {}
