package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestRead(t *testing.T) {
	vcs := func(v string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/sluicehq/sluice", Version: v}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		build                 func() (*debug.BuildInfo, bool)
		want, compact         string
	}{
		{"release stamps win", "v1.2.3", rev, "2026-12-01T10:00:00Z", vcs("(devel)", "vcs.revision", "ffff"), "v1.2.3 (commit 0123456789ab, 2026-12-01T10:00:00Z)", "v1.2.3 0123456789ab 2026-12-01"},
		{"go build in a checkout", "", "", "", vcs("v0.0.0-20261201100000-0123456789ab+dirty", "vcs.revision", rev, "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "true"),
			"v0.0.0-20261201100000-0123456789ab+dirty (commit 0123456789ab+modified, 2026-12-01T10:00:00Z)", "v0.0.0-20261201100000-0123456789ab+dirty"},
		{"go install from a tag", "", "", "", vcs("v1.4.0"), "v1.4.0 (commit unknown)", "v1.4.0 unknown"},
		{"no vcs information", "", "", "", vcs("(devel)"), "dev (commit unknown)", "dev unknown"},
		{"no build information", "", "", "", none, "dev (commit unknown)", "dev unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := read(tc.version, tc.commit, tc.date, tc.build)
			if got := in.String(); got != tc.want {
				t.Errorf("String: got %q, want %q", got, tc.want)
			}
			if got := in.Compact(); got != tc.compact {
				t.Errorf("Compact: got %q, want %q", got, tc.compact)
			}
		})
	}
}
