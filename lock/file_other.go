//go:build !unix

package lock

import "errors"

// openFile fails: the file backend relies on flock(2).
func openFile(string, Options) (Locker, error) {
	return nil, errors.New("the file: lock backend needs a Unix system; use redis://, a database URL or sqlite:PATH")
}
