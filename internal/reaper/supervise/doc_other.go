//go:build !linux

// Package supervise is the supervisor process of package reaper; it runs
// only on Linux (reaper.Supported).
package supervise
