package sqldriver

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/driver"
)

// Prefix is a driver's table prefix: p, or driver.DefaultPrefix when p
// is empty, checked.
func Prefix(p string) (string, error) {
	if p == "" {
		p = driver.DefaultPrefix
	}
	return p, driver.ValidatePrefix(p)
}

// ApplyPrefix rewrites the default table prefix in sql.
func ApplyPrefix(sql, prefix string) string {
	if prefix == driver.DefaultPrefix || prefix == "" {
		return sql
	}
	return strings.ReplaceAll(sql, driver.DefaultPrefix, prefix)
}

// Migration is one numbered schema change.
type Migration struct {
	Version    int
	Name       string
	Statements []string
	// Prepare, when set, returns statements that run before Statements,
	// computed from the database when the migration runs: what a static
	// file cannot name, such as constraints the server named itself.
	Prepare func(ctx context.Context, q driver.Querier) ([]string, error)
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
