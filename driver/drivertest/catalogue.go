package drivertest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/internal/sqldriver"
	"github.com/sluicehq/sluice/sluicetype"
)

// catalogued is what the bundled SQL drivers expose for the Catalogue
// area: their statements with the files they come from, and the binding
// of the statements written with ?.
type catalogued interface {
	Statements() ([]sqldriver.Statement, error)
	Bind(q string, n int) string
	ListQuery(p sluicetype.ListParams) (string, []any)
	BulkQueries(p driver.BulkParams) ([]string, [][]any, error)
}

// bundled names the drivers of this repository, which must list their
// statements: a third party's driver cannot (sqldriver is internal).
var bundled = map[string]bool{"sqlite": true, "mysql": true, "postgres": true}

// exerciseCatalogue prepares every statement of the driver's catalogue
// on the migrated database, so that a statement the server refuses
// (syntax, a table or column that no migration made) fails here, naming
// its file and statement, instead of on the first call that runs it.
// Markers are expanded as the driver expands them, with and without a
// type filter; the listing's fragments are prepared within the listings
// that use them.
func exerciseCatalogue(t *testing.T, open Opener) {
	t.Run("Prepares", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		cd, ok := b.d.(catalogued)
		if !ok {
			if bundled[b.d.Name()] {
				t.Fatalf("driver %s does not list its statements", b.d.Name())
			}
			t.Skipf("%s lists no statements", b.d.Name())
		}
		stmts, err := cd.Statements()
		require.NoError(t, err)
		require.NotEmpty(t, stmts)
		byName := map[string]sqldriver.Statement{}
		for _, s := range stmts {
			byName[s.Name] = s
		}
		// A table the driver creates on first use, not by a migration,
		// exists before its other statements run: create it the same way.
		for _, s := range stmts {
			if strings.HasPrefix(strings.TrimSpace(withoutComments(s.Text)), "CREATE TABLE IF NOT EXISTS") {
				_, err := b.d.DB().ExecContext(b.ctx, s.Text)
				require.NoError(t, err, "%s (%s)", s.Name, s.File)
			}
		}
		prepared := 0
		prepare := func(what, q string) {
			prepared++
			st, err := b.d.DB().PrepareContext(b.ctx, q)
			if err != nil {
				t.Errorf("%s does not prepare on %s: %v\n%s", what, b.d.Name(), err, q)
				return
			}
			require.NoError(t, st.Close())
			if b.d.Name() == "mysql" && explainable(q) {
				// MariaDB resolves a multi-table UPDATE's names only when
				// it runs: EXPLAIN runs the statement's resolution, and
				// writes nothing.
				rows, err := b.d.DB().QueryContext(b.ctx, "EXPLAIN "+q, explainArgs(q)...)
				if err == nil {
					err = rows.Close()
				}
				if err != nil {
					t.Errorf("%s cannot be explained on %s: %v\n%s", what, b.d.Name(), err, q)
				}
			}
		}
		for _, s := range stmts {
			if fragments[s.Name] {
				continue
			}
			for _, q := range expansions(t, s, byName, b.d.Dialect(), cd.Bind) {
				prepare(s.Name+" ("+s.File+")", q)
			}
		}
		// The fragments, within the listings and bulk selections that
		// join them.
		payload := sluicetype.ListParams{PayloadField: "a.b", PayloadValue: "c", Limit: 10}
		for name, p := range map[string]sluicetype.ListParams{
			"List":        {Limit: 10},
			"ListStatus":  {Status: sluicetype.StatusFailed, Limit: 10},
			"ListPayload": payload,
		} {
			q, _ := cd.ListQuery(p)
			prepare(name+" ("+byName[name].File+") in a listing", q)
		}
		for name, f := range map[string]sluicetype.ListParams{"ListIDs": {}, "ListPayload": payload} {
			qs, _, err := cd.BulkQueries(driver.BulkParams{Action: sluicetype.BulkRetry, Filter: f})
			require.NoError(t, err)
			for _, q := range qs {
				prepare(name+" ("+byName[name].File+") in a bulk selection", q)
			}
		}
		t.Logf("%d statements, %d texts prepared on %s", len(stmts), prepared, b.d.Name())
	})
}

// fragments are the statements that are parts of a listing
// (sqldriver's bulk.go joins them), prepared within one.
var fragments = map[string]bool{"List": true, "ListIDs": true, "ListStatus": true, "ListPayload": true}

var numbered = regexp.MustCompile(`[$?]([0-9]+)`)

// expansions are the texts s runs as: its markers expanded as the
// driver expands them, without a type filter and, where s takes one,
// with one.
func expansions(t *testing.T, s sqldriver.Statement, all map[string]sqldriver.Statement, d driver.Dialect, bind func(string, int) string) []string {
	t.Helper()
	q := s.Text
	if strings.Contains(q, "(/*ROWS*/)") {
		// A derived table of rows (MySQL's CompleteMany): its row is
		// the statement of the same name with First, rows joined by
		// UNION ALL.
		row, ok := all[s.Name+"First"]
		require.True(t, ok, "%s (%s): no %sFirst for its rows", s.Name, s.File, s.Name)
		q = strings.Replace(q, "/*ROWS*/", row.Text+" UNION ALL "+row.Text, 1)
	} else if before, _, ok := strings.Cut(q, "VALUES /*ROWS*/"); ok {
		// Rows of placeholders, one per column listed before VALUES.
		cols := before[strings.LastIndex(before, "(")+1:]
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", strings.Count(cols, ",")+1), ", ") + ")"
		q = strings.Replace(q, "/*ROWS*/", row+", "+row, 1)
	}
	variants := [][]string{nil}
	if strings.Contains(q, sqldriver.TypesMarker) || strings.Contains(q, "/*FILTER*/") {
		variants = append(variants, []string{"mail", "pdf"})
	}
	var out []string
	for _, types := range variants {
		v := q
		filter := ""
		if len(types) > 0 {
			filter = " AND type IN (?, ?)"
		}
		v = strings.ReplaceAll(v, "/*FILTER*/", filter)
		if m := numbered.FindAllStringSubmatch(v, -1); m != nil {
			// Numbered placeholders: the filter and the list take the
			// next numbers, as the driver's calls number them.
			next := 1
			for _, g := range m {
				n, _ := strconv.Atoi(g[1])
				next = max(next, n+1)
			}
			if strings.Contains(v, sqldriver.TypesMarker) {
				v = sqldriver.TypeFilter(v, next, types, d.Placeholder)
				next += len(types)
			}
			v = sqldriver.List(v, next, 2, d.Placeholder)
		} else {
			// Statements written with ?, numbered by Bind.
			v = bind(sqldriver.TypeFilter(v, 0, types, func(int) string { return "?" }), 2)
		}
		out = append(out, v)
	}
	return out
}

// explainable is whether q is a statement MySQL's EXPLAIN takes.
func explainable(q string) bool {
	word, _, _ := strings.Cut(strings.TrimLeft(withoutComments(q), " \n("), " ")
	switch strings.ToUpper(strings.TrimSpace(word)) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH":
		return true
	}
	return false
}

// withoutComments is q without its -- comment lines, whose ? are no
// placeholders.
func withoutComments(q string) string {
	var sb strings.Builder
	for _, line := range strings.SplitAfter(q, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			sb.WriteString(line)
		}
	}
	return sb.String()
}

// explainArgs are arguments for the ? of q: 1 after LIMIT, which takes
// only a number, else "1", which every function takes.
func explainArgs(q string) []any {
	parts := strings.Split(withoutComments(q), "?")
	args := make([]any, len(parts)-1)
	for i := range args {
		args[i] = "1"
		if strings.HasSuffix(strings.ToUpper(strings.TrimSpace(parts[i])), "LIMIT") {
			args[i] = 1
		}
	}
	return args
}
