package driver

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DefaultPrefix starts every table and index name in the embedded SQL. A
// driver opened with another prefix rewrites it, which lets benchmarks and
// tests keep their tables apart from the application's.
const DefaultPrefix = "sluice_"

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}_$`)

// ValidatePrefix checks a table prefix; it ends up in SQL text, so only a
// narrow alphabet is allowed.
func ValidatePrefix(prefix string) error {
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("table prefix %q: want lower-case letters, digits and underscores, ending in _", prefix)
	}
	return nil
}

// LoadQueries reads every dir/*.sql file of fsys into a map keyed by the
// file's base name, with the table prefix applied. It fails if one of the
// required names is missing, so a typo is caught when the driver opens.
func LoadQueries(fsys fs.FS, dir, prefix string, required ...string) (map[string]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read queries: %w", err)
	}
	q := make(map[string]string, len(entries))
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read query %s: %w", e.Name(), err)
		}
		q[strings.TrimSuffix(e.Name(), ".sql")] = ApplyPrefix(strings.TrimSpace(string(b)), prefix)
	}
	for _, name := range required {
		if q[name] == "" {
			return nil, fmt.Errorf("query %s.sql is missing or empty", name)
		}
	}
	return q, nil
}

// ApplyPrefix rewrites the default table prefix in sql.
func ApplyPrefix(sql, prefix string) string {
	if prefix == DefaultPrefix || prefix == "" {
		return sql
	}
	return strings.ReplaceAll(sql, DefaultPrefix, prefix)
}

// Migration is one numbered schema change.
type Migration struct {
	Version    int
	Name       string
	Statements []string
	// Prepare, when set, returns statements that run before Statements,
	// computed from the database when the migration runs: what a static
	// file cannot name, such as constraints the server named itself.
	Prepare func(ctx context.Context, q Querier) ([]string, error)
}

// LoadMigrations reads dir/NNN_name.sql files in version order.
func LoadMigrations(fsys fs.FS, dir, prefix string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		if e.IsDir() || !ok || !strings.HasSuffix(name, ".sql") {
			continue
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its version number", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{
			Version:    v,
			Name:       strings.TrimSuffix(rest, ".sql"),
			Statements: SplitStatements(ApplyPrefix(string(b), prefix)),
		})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1, 2, 3...: found %d at position %d", m.Version, i+1)
		}
	}
	return ms, nil
}

// SplitStatements splits a migration file on semicolons that end a line,
// except inside a $$-quoted body: a PostgreSQL function's, or a MySQL or
// SQLite trigger's, whose first and last lines end in a "-- $$" comment
// (the statement then ends at a line holding ";"). Migrations are our
// own files, so this simple rule is enough: no statement in them ends a
// line inside a string literal.
func SplitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	inBody := false
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") && cur.Len() == 0 {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.Count(line, "$$")%2 == 1 {
			inBody = !inBody
		}
		if !inBody && strings.HasSuffix(trimmed, ";") {
			if s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
