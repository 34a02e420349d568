// Package readmetest runs the documentation: README.md and every guide
// under docs/. Every shell, crontab and SQL block a reader is meant to run
// is executed verbatim by this package's tests, and every config block is
// loaded. A block says how it is tested with an HTML comment on the line
// before its fence:
//
//	<!-- readme-test: run SCENARIO -->       a sh/bash/crontab block, run in SCENARIO
//	<!-- readme-test: file SCENARIO NAME --> a yaml block written to NAME in SCENARIO's directory
//	<!-- readme-test: config -->             a yaml block that must load as a config file
//	<!-- readme-test: sql DB... -->          a sql block run on each DB (mysql, postgres, sqlite)
//	<!-- readme-test: skip (REASON) -->      not run, for the reason given
//
// A block in one of the Checked languages without a marker fails the test,
// so no block is skipped silently. A scenario's blocks run in one sandbox
// per file, in the file's order.
package readmetest

import (
	"fmt"
	"regexp"
	"strings"
)

// Checked lists the fence languages whose blocks must carry a marker.
var Checked = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true,
	"crontab": true, "sql": true, "yaml": true}

// Block is one fenced code block of a Markdown file.
type Block struct {
	File   string // the file, relative to the repository root
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

func (b Block) String() string { return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Lang) }

var (
	fenceRe  = regexp.MustCompile("^( *)(```+)\\s*([^`\\s]*)\\s*$")
	markerRe = regexp.MustCompile(`^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$`)
)

// Parse returns the fenced blocks of file, whose text is doc. A marker
// that is not directly followed by a fence is an error, so a marker cannot
// drift off its block.
func Parse(file, doc string) ([]Block, error) {
	lines := strings.Split(doc, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		if m := markerRe.FindStringSubmatch(lines[i]); m != nil {
			if i+1 >= len(lines) || !fenceRe.MatchString(lines[i+1]) {
				return nil, fmt.Errorf("%s:%d: readme-test marker not directly followed by a code fence", file, i+1)
			}
			continue
		}
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := m[1], m[2]
		b := Block{File: file, Line: i + 1, Lang: m[3]}
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
			return nil, fmt.Errorf("%s:%d: unclosed code fence", file, b.Line)
		}
		b.Text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks, nil
}
