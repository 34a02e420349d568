package supervise

import (
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// The supervisor takes its process over in an init, which Go runs only
// once every package it imports has initialized; each import beyond these
// few lets more of a large binary's packages initialize first, and every
// command job pays for them (see the package comment).
func TestImportsStayFew(t *testing.T) {
	allowed := []string{"errors", "os", "os/signal", "strconv", "strings", "syscall", "time"}
	f, err := parser.ParseFile(token.NewFileSet(), "supervise_linux.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !slices.Contains(allowed, path) {
			t.Errorf("supervise imports %s; it may import only %v", path, allowed)
		}
	}
}
