//go:build !unix

package batch

// processAlive cannot check other systems' processes cheaply, so it says
// yes: a crashed runner's shard then waits for its lease to expire.
func processAlive(int) bool { return true }
