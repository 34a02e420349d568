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
	"github.com/sluicehq/sluice/internal/testdb"
)

// bin is the sluice binary built from this tree; the blocks find it on PATH.
var bin string

func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

// repoRoot is the module root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root")
	return root
}

func readme(t *testing.T) []Block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	blocks, err := Parse(string(b))
	require.NoError(t, err)
	return blocks
}

var dbNames = map[string]bool{"mysql": true, "postgres": true, "sqlite": true}

// Every block a reader might run carries a marker that this package
// understands, and every scenario the tests define is used by a block.
func TestReadmeBlocksAreMarked(t *testing.T) {
	used := map[string]bool{}
	for _, b := range readme(t) {
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
		require.True(t, used[name], "scenario %q has no README block", name)
	}
}

// Every config block, and every file a scenario writes, loads as a
// config file.
func TestReadmeConfigBlocks(t *testing.T) {
	t.Setenv("SLUICE_TOKEN", "readme-token")
	t.Setenv("HOOK_SECRET", "readme-secret")
	n := 0
	for _, b := range readme(t) {
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

// Every run block, in README order within its scenario.
func TestReadmeShellBlocks(t *testing.T) {
	byScenario := map[string][]Block{}
	files := map[string][]Block{}
	var order []string
	for _, b := range readme(t) {
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
	for _, name := range order {
		t.Run(name, func(t *testing.T) {
			sc := newScene(t)
			spec := scenarios[name]
			spec.setup(t, sc)
			for _, f := range files[name] {
				require.NoError(t, os.WriteFile(filepath.Join(sc.dir, f.Args()[1]), []byte(f.Text), 0o644), "%s", f)
			}
			for _, b := range byScenario[name] {
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
		})
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
