package readmetest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// bin is the sluice binary built from this tree; the blocks find it on PATH.
var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

// repoRoot is the module root, three levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root")
	return root
}

// elsewhere names the documents whose blocks another test runs, and which
// test: they use that test's markers, so this package only parses them.
var elsewhere = map[string]string{
	"docs/php.md":                "clients/php TestPHPGuide",
	"docs/zh/php.md":             "clients/php TestPHPGuide, which holds its blocks to docs/php.md's",
	"docs/zh/quickstart.md":      "TestChineseQuickstart, which holds its blocks to README.md's Quickstart, run here",
	"docs/zh/getting-started.md": "TestChineseGettingStarted, which holds its blocks to docs/getting-started.md's, run here",
}

// docFiles are the Markdown files a reader follows: README.md, then
// docs/*.md and docs/zh/*.md by name.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/zh/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot(t), pattern))
		require.NoError(t, err)
		for _, p := range m {
			rel, err := filepath.Rel(repoRoot(t), p)
			require.NoError(t, err)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

func parseFile(t *testing.T, file string) []Block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	require.NoError(t, err)
	blocks, err := Parse(file, string(b))
	require.NoError(t, err)
	return blocks
}

// doc is one file this package runs, with its blocks.
type doc struct {
	file   string
	blocks []Block
}

// docs are the files this package runs: every one of docFiles but those
// another test runs.
func docs(t *testing.T) []doc {
	t.Helper()
	var out []doc
	for _, f := range docFiles(t) {
		blocks := parseFile(t, f) // parsed even when run elsewhere: a stray marker fails here too
		if _, ok := elsewhere[f]; !ok {
			out = append(out, doc{file: f, blocks: blocks})
		}
	}
	return out
}

// allBlocks are the blocks of every file this package runs, in docs order.
func allBlocks(t *testing.T) []Block {
	t.Helper()
	var all []Block
	for _, d := range docs(t) {
		all = append(all, d.blocks...)
	}
	return all
}

var dbNames = map[string]bool{"mysql": true, "postgres": true, "sqlite": true}

// Every block a reader might run carries a marker that this package
// understands, every scenario the tests define is used by a block, and
// every document said to be run elsewhere exists.
func TestDocBlocksAreMarked(t *testing.T) {
	files := map[string]bool{}
	for _, f := range docFiles(t) {
		files[f] = true
	}
	for f, by := range elsewhere {
		require.True(t, files[f], "%s, run by %s, is missing", f, by)
	}
	used := map[string]bool{}
	for _, b := range allBlocks(t) {
		if !Checked[b.Lang] {
			require.Empty(t, b.Marker, "%s: a readme-test marker on a %q block, which is never tested", b, b.Lang)
			continue
		}
		require.NotEmpty(t, b.Marker, "%s: every %s block needs a readme-test marker (run, file, config, sql, or skip with a reason)", b, b.Lang)
		args := b.Args()
		switch b.Kind() {
		case "run":
			require.Contains(t, []string{"sh", "bash", "crontab"}, b.Lang, "%s: run is for sh, bash and crontab blocks", b)
			require.Len(t, args, 1, "%s: run SCENARIO", b)
			_, ok := scenarios[args[0]]
			require.True(t, ok, "%s: unknown scenario %q", b, args[0])
			used[args[0]] = true
		case "file":
			require.Equal(t, "yaml", b.Lang, "%s: file is for yaml blocks", b)
			require.Len(t, args, 2, "%s: file SCENARIO NAME", b)
			_, ok := scenarios[args[0]]
			require.True(t, ok, "%s: unknown scenario %q", b, args[0])
		case "config":
			require.Equal(t, "yaml", b.Lang, "%s: config is for yaml blocks", b)
		case "sql":
			require.Equal(t, "sql", b.Lang, "%s: sql is for sql blocks", b)
			require.NotEmpty(t, args, "%s: sql DB...", b)
			for _, db := range args {
				require.True(t, dbNames[db], "%s: unknown database %q", b, db)
			}
		case "skip":
			require.Regexp(t, `^skip \(.+\)$`, b.Marker, "%s: skip needs a reason: skip (REASON)", b)
		default:
			t.Fatalf("%s: unknown readme-test marker %q", b, b.Marker)
		}
	}
	for name := range scenarios {
		require.True(t, used[name], "scenario %q has no block in the docs", name)
	}
}

// Every config block, and every file a scenario writes, loads as a
// config file.
func TestDocConfigBlocks(t *testing.T) {
	t.Setenv("SLUICE_TOKEN", "readme-token-Gp6Vc1Ys8Dh3Lw5M")
	t.Setenv("HOOK_SECRET", "readme-secret")
	n := 0
	for _, b := range allBlocks(t) {
		if b.Kind() != "config" && b.Kind() != "file" {
			continue
		}
		p := filepath.Join(t.TempDir(), "sluice.yaml")
		require.NoError(t, os.WriteFile(p, []byte(b.Text), 0o644))
		_, err := config.Load(p)
		require.NoError(t, err, "%s", b)
		n++
	}
	require.NotZero(t, n)
}

// Every run block: one subtest per file, and in it one sandbox per
// scenario, whose blocks run in the file's order.
func TestDocShellBlocks(t *testing.T) {
	for _, d := range docs(t) {
		byScenario := map[string][]Block{}
		files := map[string][]Block{}
		var order []string
		for _, b := range d.blocks {
			switch b.Kind() {
			case "run":
				s := b.Args()[0]
				if byScenario[s] == nil {
					order = append(order, s)
				}
				byScenario[s] = append(byScenario[s], b)
			case "file":
				files[b.Args()[0]] = append(files[b.Args()[0]], b)
			}
		}
		if len(order) == 0 {
			continue
		}
		t.Run(d.file, func(t *testing.T) {
			for _, name := range order {
				t.Run(name, func(t *testing.T) { runScenario(t, name, files[name], byScenario[name]) })
			}
		})
	}
}

// runScenario runs one file's blocks of a scenario in a fresh sandbox.
func runScenario(t *testing.T, name string, files, blocks []Block) {
	sc := newScene(t)
	spec := scenarios[name]
	spec.setup(t, sc)
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(sc.dir, f.Args()[1]), []byte(f.Text), 0o644), "%s", f)
	}
	for _, b := range blocks {
		if spec.before != nil {
			spec.before(t, sc, b)
		}
		if b.Lang == "crontab" {
			sc.runCrontab(t, b)
		} else {
			sc.runShell(t, b)
		}
		if spec.after != nil {
			spec.after(t, sc, b)
		}
	}
	if spec.done != nil {
		spec.done(t, sc)
	}
}

// TestChineseQuickstart holds docs/zh/quickstart.md to the blocks of
// README.md "Quickstart", which TestDocShellBlocks runs: a change there
// fails here until the translation follows.
func TestChineseQuickstart(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	start := strings.Index(string(readme), "\n## Quickstart\n")
	require.NotEqual(t, -1, start, "README.md has a Quickstart section")
	section := string(readme)[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	want, err := Parse("README.md", section)
	require.NoError(t, err)
	require.NotEmpty(t, want, "README.md Quickstart has blocks")
	requireSameBlocks(t, want, "docs/zh/quickstart.md")
}

// TestChineseGettingStarted holds docs/zh/getting-started.md to the blocks
// of docs/getting-started.md, which TestDocShellBlocks runs.
func TestChineseGettingStarted(t *testing.T) {
	requireSameBlocks(t, parseFile(t, "docs/getting-started.md"), "docs/zh/getting-started.md")
}

// requireSameBlocks fails unless the translation file has want's blocks,
// markers and text byte for byte, in order.
func requireSameBlocks(t *testing.T, want []Block, file string) {
	t.Helper()
	got := parseFile(t, file)
	require.Equal(t, len(want), len(got), "%s has the blocks of its English original", file)
	for i := range want {
		require.Equal(t, want[i].Marker, got[i].Marker, "%s:%d", file, got[i].Line)
		require.Equal(t, want[i].Text, got[i].Text, "%s:%d", file, got[i].Line)
	}
}

// expectRe finds a line's expected output: a trailing comment that is a
// JSON object, as in `sluice enqueue ... # {"id":1,"duplicate":true}`.
var expectRe = regexp.MustCompile(`\s#\s+(\{.*\})\s*$`)

// checkExpected compares each line's stdout with the JSON its comment shows.
func checkExpected(t *testing.T, b Block, perLine map[int]string) {
	t.Helper()
	for i, line := range strings.Split(b.Text, "\n") {
		m := expectRe.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		require.True(t, json.Valid([]byte(m[1])), "%s line %d: the expected output %s is not JSON", b, i+1, m[1])
		require.JSONEq(t, m[1], strings.TrimSpace(perLine[i+1]), "%s line %d: %s", b, i+1, line)
	}
}

// sluiceCmd runs the test's sluice binary in the scene, for set-up.
func (sc *scene) sluice(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = sc.dir
	cmd.Env = sc.environ()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "sluice %s: %s", strings.Join(args, " "), out)
	return string(out)
}
