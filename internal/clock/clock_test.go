package clock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// engine is what must read time only through the injected clock: the root
// package, the loops it starts and every driver. driver/drivertest is left
// out: it is the drivers' test suite, imported only by tests, and reads the
// host's clock on purpose to check the database's against it.
var engine = []struct {
	dir     string
	subdirs bool
}{
	{".", false},
	{"internal/worker", true},
	{"internal/maintenance", true},
	{"internal/scheduler", true},
	{"internal/metrics", true},
	{"internal/nodes", true},
	{"driver", true},
}

const skip = "driver/drivertest"

// forbidden are the reads of the process's clock that bypass the injected
// one, by import path: a skewed clock would not reach them.
// context.WithDeadline is here because the runtime compares a deadline
// with its own clock, so a deadline built from a skewed reading would be
// off by the skew.
var forbidden = map[string]map[string]bool{
	"time":    {"Now": true, "Since": true, "Until": true},
	"context": {"WithDeadline": true},
}

// TestEngineReadsTimeOnlyThroughClock makes "every decision uses the
// database clock" structural: the engine's non-test files never read the
// process's clock except through clock.Clock, which sluice.Config.Clock
// injects and the clock-skew fault test skews.
func TestEngineReadsTimeOnlyThroughClock(t *testing.T) {
	root := repoRoot(t)
	var files, bad []string
	for _, e := range engine {
		err := filepath.WalkDir(filepath.Join(root, e.dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel != e.dir && (!e.subdirs || rel == skip || d.Name() == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			files = append(files, rel)
			bad = append(bad, clockReads(t, path, rel)...)
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, files, "runonce.go")
	require.Contains(t, files, "internal/worker/producer.go")
	require.Contains(t, files, "driver/internal/sqldriver/observe.go")
	require.Empty(t, bad, "read the time through the injected clock.Clock (Now, Since), and use durations (context.WithTimeout, time.After) rather than deadlines")

	// The check finds the one read the clock package itself makes.
	require.Equal(t, []string{"internal/clock/clock.go:18: time.Now"},
		clockReads(t, filepath.Join(root, "internal/clock/clock.go"), "internal/clock/clock.go"))
}

// clockReads lists each use of a forbidden function in one file, called
// or not (a function value such as `Clock: time.Now` reads it later).
func clockReads(t *testing.T, path, rel string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	names := map[string]map[string]bool{} // local package name -> forbidden functions
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		require.NoError(t, err)
		fns, ok := forbidden[p]
		if !ok {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "." {
			out = append(out, fset.Position(imp.Pos()).String()+": dot import of "+p)
			continue
		}
		names[name] = fns
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && names[pkg.Name][sel.Sel.Name] {
			out = append(out, rel+":"+strconv.Itoa(fset.Position(sel.Pos()).Line)+": "+pkg.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.mod not found")
		dir = parent
	}
}
