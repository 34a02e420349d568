package readmetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

var (
	// linkRe is a Markdown link's target: [text](target).
	linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// sectionRe is a link to a guide followed by a quoted section title,
	// the docs' way to cite a section of another guide.
	sectionRe = regexp.MustCompile(`\]\(([^)#\s]+\.md)\)\s+"([^"]+)"`)
)

// TestDocLinks fails on a relative link of a doc that leads to no file, on
// an #anchor that no heading of its file makes, and on a cited section
// ("Title" after a link) that its file has no heading for: moving a fact
// from one guide to another must move its links too.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		dir := filepath.Dir(filepath.Join(root, file))
		for i, line := range strings.Split(string(b), "\n") {
			where := file + ":" + strconv.Itoa(i+1)
			for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				full := filepath.Join(root, file)
				if path != "" {
					full = filepath.Join(dir, path)
				}
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: links to %s, which is not in the repository", where, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(full, ".md") && !hasAnchor(t, full, anchor) {
					t.Errorf("%s: links to %s, whose file has no heading for #%s", where, target, anchor)
				}
				checked++
			}
		}
		// Over the whole text: a cited title may follow its link on the next line.
		for _, m := range sectionRe.FindAllStringSubmatchIndex(string(b), -1) {
			doc, title := string(b[m[2]:m[3]]), strings.Join(strings.Fields(string(b[m[4]:m[5]])), " ")
			if strings.Contains(doc, "://") {
				continue
			}
			if full := filepath.Join(dir, doc); fileExists(full) && !hasHeading(t, full, title) {
				t.Errorf("%s:%d: cites section %q of %s, which has no such heading", file, 1+strings.Count(string(b[:m[0]]), "\n"), title, doc)
			}
		}
	}
	require.NotZero(t, checked)
	t.Logf("checked %d links", checked)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// headings are a Markdown file's heading texts, outside code fences.
func headings(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	return out
}

// hasHeading reports whether the file has a heading whose text is title,
// or starts with title and a colon (as docs_test.go reads Go comments).
func hasHeading(t *testing.T, path, title string) bool {
	for _, h := range headings(t, path) {
		if h == title || strings.HasPrefix(h, title+":") {
			return true
		}
	}
	return false
}

// hasAnchor reports whether a heading of the file gets the anchor as
// GitHub makes it: lower case, punctuation dropped, spaces as hyphens.
func hasAnchor(t *testing.T, path, anchor string) bool {
	for _, h := range headings(t, path) {
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
