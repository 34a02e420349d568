package sqldriver

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"
)

// shared holds the statements every dialect runs as written: the area
// files of queries/, read beside each dialect's own.
//
//go:embed queries/*.sql
var shared embed.FS

// Markers the statements hold, expanded when a statement runs (List,
// TypeFilter, Bind) or, for JobColumnsMarker, when the catalogue loads.
const (
	// JobColumnsMarker stands for the job column list, JobColumns.
	JobColumnsMarker = "/*JOB_COLUMNS*/"
	// ListMarker stands for a list of placeholders, one per value.
	ListMarker = "/*LIST*/"
	// TypesMarker stands for the condition AND type IN (...) of a claim
	// or runnable probe limited to some types, and for nothing otherwise.
	TypesMarker = "/*TYPES*/"
)

const nameHeader = "-- name: "

// statement is one named text of a catalogue and the file it came from.
type statement struct {
	text, file string
}

// LoadQueries fills queries, a pointer to a struct of string fields (and
// of embedded structs of them), with the statements that bear the fields'
// names: the dialect's own, the -- name: sections of own's queries/*.sql,
// and the shared ones, with the table prefix applied and the job column
// list expanded. A field with no statement, a statement with no field and
// a name written twice are errors that name the file, so that a catalogue
// and its struct cannot drift apart.
func LoadQueries(queries any, own fs.FS, prefix string) error {
	stmts := map[string]statement{}
	if err := readCatalogue(stmts, own, "queries"); err != nil {
		return err
	}
	if err := readCatalogue(stmts, shared, "queries"); err != nil {
		return err
	}
	v := reflect.ValueOf(queries)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("queries: want a pointer to a struct, got %T", queries)
	}
	used := map[string]bool{}
	if err := fill(v.Elem(), stmts, used, prefix); err != nil {
		return err
	}
	var extra []string
	for name, s := range stmts {
		if !used[name] {
			extra = append(extra, fmt.Sprintf("%s (%s)", name, s.file))
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("statements with no field in %T: %s", queries, strings.Join(extra, ", "))
	}
	return nil
}

// fill sets each string field of v to its statement, walking embedded
// structs.
func fill(v reflect.Value, stmts map[string]statement, used map[string]bool, prefix string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			if err := fill(v.Field(i), stmts, used, prefix); err != nil {
				return err
			}
		case f.Type.Kind() == reflect.String && f.IsExported():
			s, ok := stmts[f.Name]
			if !ok {
				return fmt.Errorf("query %s: no %q line in queries/*.sql", f.Name, nameHeader+f.Name)
			}
			used[f.Name] = true
			text := strings.ReplaceAll(s.text, JobColumnsMarker, strings.Join(JobColumns(), ", "))
			v.Field(i).SetString(ApplyPrefix(text, prefix))
		default:
			return fmt.Errorf("query struct %s: field %s is neither a string nor an embedded struct", t.Name(), f.Name)
		}
	}
	return nil
}

// readCatalogue adds the named statements of dir/*.sql in fsys to stmts.
// Each starts at a line "-- name: Name" and runs to the next such line;
// the comments above a file's first header describe the file.
func readCatalogue(stmts map[string]statement, fsys fs.FS, dir string) error {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return fmt.Errorf("read queries: %w", err)
	}
	for _, file := range files {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return fmt.Errorf("read queries: %w", err)
		}
		name, text := "", strings.Builder{}
		add := func() error {
			body := strings.TrimSpace(text.String())
			if name == "" {
				if body != "" && !onlyComments(body) {
					return fmt.Errorf("%s: SQL before the first %q header", file, nameHeader)
				}
				return nil
			}
			if body == "" || onlyComments(body) {
				return fmt.Errorf("%s: statement %s is empty", file, name)
			}
			if prev, ok := stmts[name]; ok {
				return fmt.Errorf("statement %s is in both %s and %s", name, prev.file, file)
			}
			stmts[name] = statement{text: body, file: file}
			return nil
		}
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), nameHeader); ok {
				if err := add(); err != nil {
					return err
				}
				name = strings.TrimSpace(rest)
				text.Reset()
				continue
			}
			text.WriteString(line)
		}
		if err := add(); err != nil {
			return err
		}
	}
	return nil
}

func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

// Statement is one statement of a loaded catalogue: its field's name,
// the file it was read from and its text as loaded.
type Statement struct {
	Name, File, Text string
}

// Statements lists the statements of queries, which LoadQueries filled
// from own and the shared files, each with its file under dir (the
// dialect's directory in the repository), so that the conformance suite
// can prepare every one against a database and name what fails.
func Statements(queries any, own fs.FS, dir string) ([]Statement, error) {
	ownStmts, sharedStmts := map[string]statement{}, map[string]statement{}
	if err := readCatalogue(ownStmts, own, "queries"); err != nil {
		return nil, err
	}
	if err := readCatalogue(sharedStmts, shared, "queries"); err != nil {
		return nil, err
	}
	var out []Statement
	EachQuery(queries, func(name, text string) {
		file := "driver/internal/sqldriver/" + sharedStmts[name].file
		if s, ok := ownStmts[name]; ok {
			file = path.Join(dir, s.file)
		}
		out = append(out, Statement{Name: name, File: file, Text: text})
	})
	return out, nil
}

// List expands the ListMarker in q to n placeholders numbered from start.
func List(q string, start, n int, placeholder func(int) string) string {
	return strings.Replace(q, ListMarker, placeholders(start, n, placeholder), 1)
}

// TypeFilter expands every TypesMarker in q: to nothing without types, so
// that the statement takes every type, else to AND type IN (...) with
// len(types) placeholders numbered from start, which every marker of q
// shares. The caller binds the types where those placeholders stand.
func TypeFilter(q string, start int, types []string, placeholder func(int) string) string {
	cond := ""
	if len(types) > 0 {
		cond = " AND type IN (" + placeholders(start, len(types), placeholder) + ")"
	}
	return strings.ReplaceAll(q, TypesMarker, cond)
}

func placeholders(start, n int, placeholder func(int) string) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(placeholder(start + i))
	}
	return sb.String()
}

// Args converts values to bind arguments.
func Args[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// LoadFiles loads the files a dialect embeds in fsys: its statements into
// queries (see LoadQueries) and its migrations, under the table prefix
// that Prefix makes of prefix, which it returns.
func LoadFiles(queries any, fsys fs.FS, prefix string) (string, []Migration, error) {
	prefix, err := Prefix(prefix)
	if err != nil {
		return "", nil, err
	}
	if err := LoadQueries(queries, fsys, prefix); err != nil {
		return "", nil, err
	}
	migs, err := LoadMigrations(fsys, "migrations", prefix)
	return prefix, migs, err
}

// EachQuery calls fn with the name and text of every statement of
// queries, a struct LoadQueries filled.
func EachQuery(queries any, fn func(name, text string)) {
	eachField(reflect.ValueOf(queries).Elem(), fn)
}

func eachField(v reflect.Value, fn func(name, text string)) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous {
			eachField(v.Field(i), fn)
		} else if f.IsExported() {
			fn(f.Name, v.Field(i).String())
		}
	}
}
