// Package readmetest runs README.md: every shell, crontab and SQL block a
// reader is meant to run is executed verbatim by this package's tests, and
// every config block is loaded. A block says how it is tested with an HTML
// comment on the line before its fence:
//
//	<!-- readme-test: run SCENARIO -->       a sh/bash/crontab block, run in SCENARIO
//	<!-- readme-test: file SCENARIO NAME --> a yaml block written to NAME in SCENARIO's directory
//	<!-- readme-test: config -->             a yaml block that must load as a config file
//	<!-- readme-test: sql DB... -->          a sql block run on each DB (mysql, postgres, sqlite)
//	<!-- readme-test: skip (REASON) -->      not run, for the reason given
//
// A block in one of the Checked languages without a marker fails the test,
// so no block is skipped silently.
package readmetest

import (
	"fmt"
	"regexp"
	"strings"
)

// Checked lists the fence languages whose blocks must carry a marker.
var Checked = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true,
	"crontab": true, "sql": true, "yaml": true}

// Block is one fenced code block of the README.
type Block struct {
	Line   int    // 1-based line of the opening fence
	Lang   string // the fence's info string
	Marker string // the readme-test marker's text, "" when there is none
	Text   string // the content, with the fence's indentation removed
}

// Kind and Args split the marker: "run php" is kind "run", args ["php"].
func (b Block) Kind() string {
	if f := strings.Fields(b.Marker); len(f) > 0 {
		return f[0]
	}
	return ""
}

// Args are the marker's words after its kind.
func (b Block) Args() []string {
	if f := strings.Fields(b.Marker); len(f) > 1 {
		return f[1:]
	}
	return nil
}

func (b Block) String() string { return fmt.Sprintf("README.md:%d (%s)", b.Line, b.Lang) }

var (
	fenceRe  = regexp.MustCompile("^( *)(```+)\\s*([^`\\s]*)\\s*$")
	markerRe = regexp.MustCompile(`^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$`)
)

// Parse returns the README's fenced blocks. A marker that is not directly
// followed by a fence is an error, so a marker cannot drift off its block.
func Parse(readme string) ([]Block, error) {
	lines := strings.Split(readme, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		if m := markerRe.FindStringSubmatch(lines[i]); m != nil {
			if i+1 >= len(lines) || !fenceRe.MatchString(lines[i+1]) {
				return nil, fmt.Errorf("README.md:%d: readme-test marker not directly followed by a code fence", i+1)
			}
			continue
		}
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := m[1], m[2]
		b := Block{Line: i + 1, Lang: m[3]}
		if i > 0 {
			if mm := markerRe.FindStringSubmatch(lines[i-1]); mm != nil {
				b.Marker = mm[1]
			}
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == fence {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("README.md:%d: unclosed code fence", b.Line)
		}
		b.Text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks, nil
}
