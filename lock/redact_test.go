package lock_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/lock"
)

// An error about a lock backend URL names the URL without its password,
// wherever the URL carries it: the user info, or a postgres query's
// password parameter, which pgx reads.
func TestOpenErrorHidesPassword(t *testing.T) {
	for _, u := range []string{
		"postgres://app:s3cret@127.0.0.1:1/app?lease=2",
		"postgres://app@127.0.0.1:1/app?password=s3cret&lease=2",
		"redis://:s3cret@127.0.0.1:1",
	} {
		_, err := lock.Open(u, lock.Options{})
		if err == nil {
			t.Fatalf("%s: opened", u)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the password: %v", u, err)
		}
	}
}
