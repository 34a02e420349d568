package sluice_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docRef matches a Markdown file named in Go source, optionally followed by
// a quoted section title: `docs/design.md "Retries"`. URLs are skipped (the
// scheme's "//" is excluded by the leading character class).
var docRef = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./:-])([A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b(?:\s+"([^"]+)")?`)

// TestDocReferences fails when a .go file names a Markdown file that is not
// in the repository, or a section ("Title" after the file name) that the
// file has no heading for, so comments never point readers at nothing.
// Names are resolved from the repository root, then from the citing file's
// directory.
func TestDocReferences(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "ci-artifacts") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range docRef.FindAllStringSubmatch(line, -1) {
				checked++
				where := path + ":" + strconv.Itoa(i+1)
				doc, ok := findDoc(m[1], filepath.Dir(path))
				if !ok {
					t.Errorf("%s: names %s, which is not in the repository", where, m[1])
					continue
				}
				if m[2] != "" && !hasHeading(t, doc, m[2]) {
					t.Errorf("%s: names section %q of %s, which has no such heading", where, m[2], m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d Markdown references", checked)
}

func findDoc(name, dir string) (string, bool) {
	for _, p := range []string{name, filepath.Join(dir, name)} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, true
		}
	}
	return "", false
}

// hasHeading reports whether the Markdown file has a heading whose text is
// title, or starts with title and a colon.
func hasHeading(t *testing.T, path, title string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		if text == title || strings.HasPrefix(text, title+":") {
			return true
		}
	}
	return false
}
