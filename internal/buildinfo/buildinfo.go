// Package buildinfo says which sluice this is: the version, the commit and
// the build date. A release build stamps them with -ldflags -X (see
// packaging/release.sh); a plain `go build` or `go install` in a checkout
// or from a tag gets them from the build information Go records (the
// module version, vcs.revision, vcs.time, vcs.modified), so that no build
// whose commit is known calls itself a bare "dev".
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Stamped by release builds:
//
//	-X github.com/sluicehq/sluice/internal/buildinfo.version=v1.2.3
//	-X github.com/sluicehq/sluice/internal/buildinfo.commit=<40 hex>
//	-X github.com/sluicehq/sluice/internal/buildinfo.date=2026-12-01T10:00:00Z
var version, commit, date string

// Info is what one build knows of itself.
type Info struct {
	Version   string `json:"version"`    // a tag, a Go pseudo-version, or "dev"
	Commit    string `json:"commit"`     // the full commit hash, "" when unknown
	Date      string `json:"date"`       // the commit's time (UTC, RFC 3339), "" when unknown
	Modified  bool   `json:"modified"`   // built from a work tree with uncommitted changes
	GoVersion string `json:"go_version"` // the toolchain that built it
	Platform  string `json:"platform"`   // GOOS/GOARCH
}

var (
	once sync.Once
	info Info
)

// Get returns this build's Info, read once.
func Get() Info {
	once.Do(func() { info = read(version, commit, date, debug.ReadBuildInfo) })
	return info
}

// read merges the stamps with the recorded build information: a stamp
// wins, and what neither knows stays empty ("dev" for the version).
func read(version, commit, date string, build func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := build(); ok {
		// "(devel)" is what Go records when it could not derive a
		// version (no VCS information); a pseudo-version or a tag is kept.
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.Date == "" {
					in.Date = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	return in
}

// ShortCommit is the commit's first 12 hex digits, "unknown" when there is
// none.
func (i Info) ShortCommit() string {
	switch {
	case i.Commit == "":
		return "unknown"
	case len(i.Commit) > 12:
		return i.Commit[:12]
	}
	return i.Commit
}

// String is the one-line form `sluice version` prints and the Workers
// page shows: "v1.2.3 (commit 0123456789ab, 2026-12-01T10:00:00Z)", with
// "+modified" after the commit of a dirty work tree.
func (i Info) String() string {
	c := i.ShortCommit()
	if i.Modified {
		c += "+modified"
	}
	if i.Date == "" {
		return fmt.Sprintf("%s (commit %s)", i.Version, c)
	}
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, c, i.Date)
}

// Compact is the form kept in a worker's sluice_nodes row (64 characters)
// and shown on the Workers page: a Go pseudo-version already names its
// commit and time, so it stands alone; anything else gets the short commit
// and the date, "v1.2.3 0123456789ab 2026-12-01".
func (i Info) Compact() string {
	if i.Commit != "" && strings.Contains(i.Version, i.ShortCommit()) {
		return i.Version
	}
	s := i.Version + " " + i.ShortCommit()
	if i.Modified {
		s += "+modified"
	}
	if len(i.Date) >= len("2006-01-02") {
		s += " " + i.Date[:len("2006-01-02")]
	}
	return s
}
