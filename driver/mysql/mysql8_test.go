package mysql

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/driver/internal/sqldriver"
)

// mariaDBOnly are the constructs MariaDB takes and MySQL 8.0 refuses (or
// takes only from a late 8.0 release), each with the reason. CI runs
// MariaDB alone, so this list is what keeps the migrations and the
// catalogue within the grammar of MySQL 8.0.19+, which the README
// promises (docs/scale.md, "Which servers are tested").
var mariaDBOnly = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bDROP\s+(INDEX|KEY|COLUMN|CONSTRAINT|CHECK|FOREIGN\s+KEY|PRIMARY\s+KEY|PARTITION)\s+IF\s+EXISTS\b`), "DROP ... IF EXISTS inside a table: MySQL 8 has it only for whole objects (DROP TABLE/TRIGGER/VIEW IF EXISTS)"},
	{regexp.MustCompile(`(?i)\b(ADD|CHANGE|MODIFY|RENAME)\s+(COLUMN\s+|INDEX\s+|KEY\s+|UNIQUE\s+|CONSTRAINT\s+|PARTITION\s+)?IF\s+(NOT\s+)?EXISTS\b`), "ADD/CHANGE/MODIFY ... IF [NOT] EXISTS"},
	{regexp.MustCompile(`(?i)\bCREATE\s+(UNIQUE\s+|FULLTEXT\s+|SPATIAL\s+)?INDEX\s+IF\s+NOT\s+EXISTS\b`), "CREATE INDEX IF NOT EXISTS"},
	{regexp.MustCompile(`(?i)\bCREATE\s+(TRIGGER|PROCEDURE|FUNCTION|EVENT)\s+IF\s+NOT\s+EXISTS\b`), "CREATE TRIGGER/ROUTINE IF NOT EXISTS (MySQL 8.0.29+ only)"},
	{regexp.MustCompile(`(?i)\bCREATE\s+OR\s+REPLACE\s+(TABLE|TRIGGER|INDEX|PROCEDURE|FUNCTION|EVENT|SEQUENCE|DATABASE|USER|ROLE|SERVER)\b`), "CREATE OR REPLACE (MySQL has it for views only)"},
	{regexp.MustCompile(`(?i)\bRETURNING\b`), "INSERT/DELETE/REPLACE ... RETURNING"},
	{regexp.MustCompile(`(?i)\b(CREATE|ALTER|DROP)\s+SEQUENCE\b|\b(NEXTVAL|LASTVAL|SETVAL)\s*\(|\b(NEXT|PREVIOUS)\s+VALUE\s+FOR\b`), "sequences"},
	{regexp.MustCompile(`(?i)\bROWS\s+EXAMINED\b`), "LIMIT ROWS EXAMINED"},
	{regexp.MustCompile(`(?i)\bWAIT\s+[0-9]`), "WAIT n on a lock or DDL (MySQL has NOWAIT only)"},
	{regexp.MustCompile(`(?i)\b(INTERSECT|EXCEPT)\b`), "INTERSECT/EXCEPT (MySQL 8.0.31+ only)"},
	{regexp.MustCompile(`(?i)\bOFFSET\s+\S+\s+ROWS?\b|\bFETCH\s+(FIRST|NEXT)\b`), "OFFSET ... FETCH"},
	{regexp.MustCompile(`(?i)\bPERSISTENT\s+FOR\b`), "ANALYZE TABLE ... PERSISTENT FOR (engine-independent statistics)"},
	{regexp.MustCompile(`(?i)\bWITH\s+SYSTEM\s+VERSIONING\b|\bFOR\s+SYSTEM_TIME\b`), "system-versioned tables"},
	{regexp.MustCompile(`(?i)\bIGNORED\b|\bALGORITHM\s*=\s*(NOCOPY|DEFAULT\s*,)`), "ignored indexes / ALGORITHM=NOCOPY"},
	{regexp.MustCompile(`(?i)\b(INET4|INET6|UUID)\s*(NOT\s+NULL|NULL|,|\))`), "INET4/INET6/UUID column types"},
	{regexp.MustCompile(`(?i)\b(JSON_DETAILED|JSON_LOOSE|JSON_COMPACT|JSON_EQUALS|JSON_NORMALIZE|JSON_EXISTS|JSON_QUERY|JSON_ARRAY_INTERSECT|JSON_OBJECT_FILTER_KEYS|JSON_KEY_VALUE|SFORMAT|NATURAL_SORT_KEY|TO_CHAR|ADD_MONTHS|SYS_GUID|CHR|DECODE_HISTOGRAM|COLUMN_CREATE|COLUMN_GET|KDF)\s*\(`), "a function MySQL 8 lacks"},
}

// mysql8Reserved are the words MySQL 8.0 reserves that MySQL 5.7 did not
// (and ROW, ROWS), which MariaDB takes as names: a table, column or alias
// so named must be quoted.
var mysql8Reserved = map[string]bool{
	"CUME_DIST": true, "DENSE_RANK": true, "EMPTY": true, "EXCEPT": true, "FIRST_VALUE": true,
	"GROUPING": true, "GROUPS": true, "JSON_TABLE": true, "LAG": true, "LAST_VALUE": true,
	"LATERAL": true, "LEAD": true, "NTH_VALUE": true, "NTILE": true, "OF": true, "OVER": true,
	"PERCENT_RANK": true, "RANK": true, "RECURSIVE": true, "ROW_NUMBER": true, "SYSTEM": true,
	"WINDOW": true, "ROW": true, "ROWS": true,
}

// names find the unquoted names a statement gives: the columns it
// defines, aliases after AS, and the aliases of derived tables. Each
// captures the name in its first group.
var names = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:^|[(,]|\bCOLUMN)\s*([a-z_][a-z0-9_]*)\s+(?:BIGINT|INT|TINYINT|SMALLINT|VARCHAR|VARBINARY|TEXT|MEDIUMTEXT|JSON|DATETIME|DOUBLE|BOOLEAN)\b`),
	regexp.MustCompile(`(?i)\bAS\s+([a-z_][a-z0-9_]*)`),
	regexp.MustCompile(`(?i)\)\s*([a-z_][a-z0-9_]*)\s*(?:$|[,)]|\b(?:ON|WHERE|ORDER|GROUP|LEFT|JOIN|STRAIGHT_JOIN|SET|CROSS|LIMIT|UNION)\b)`),
}

// mysql8Refusals returns, for each text, every construct of mariaDBOnly it
// uses, and every name MySQL 8 reserves, outside its -- comments.
func mysql8Refusals(where, text string) []string {
	var code strings.Builder
	for _, line := range strings.Split(text, "\n") {
		code.WriteString(strings.SplitN(line, "--", 2)[0])
		code.WriteByte('\n')
	}
	var out []string
	for _, c := range mariaDBOnly {
		if m := c.re.FindString(code.String()); m != "" {
			out = append(out, fmt.Sprintf("%s: %q: %s", where, m, c.why))
		}
	}
	for _, re := range names {
		for _, m := range re.FindAllStringSubmatch(code.String(), -1) {
			if mysql8Reserved[strings.ToUpper(m[1])] {
				out = append(out, fmt.Sprintf("%s: the name %s is a reserved word of MySQL 8: quote it", where, m[1]))
			}
		}
	}
	return out
}

// TestMySQL8Grammar: no migration and no statement of the catalogue uses
// a construct of MariaDB that MySQL 8 refuses. The statements migrations
// build in Go (mysql.go's Prepare steps) are written in MySQL 8's syntax
// and run on MariaDB by the upgrade tests.
func TestMySQL8Grammar(t *testing.T) {
	migs, err := sqldriver.LoadMigrations(files, "migrations", "sluice_")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, m := range migs {
		for i, s := range m.Statements {
			bad = append(bad, mysql8Refusals(fmt.Sprintf("migrations/%03d_%s.sql, statement %d", m.Version, m.Name, i+1), s)...)
		}
	}
	q := new(queries)
	if err := sqldriver.LoadQueries(q, files, "sluice_"); err != nil {
		t.Fatal(err)
	}
	stmts, err := sqldriver.Statements(q, files, "driver/mysql")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		bad = append(bad, mysql8Refusals(s.File+" "+s.Name, s.Text)...)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if len(migs) == 0 || len(stmts) == 0 {
		t.Fatalf("checked %d migrations and %d statements", len(migs), len(stmts))
	}
}

// TestMySQL8GrammarCatches: each construct of mariaDBOnly is found in an
// example of it, and not in its MySQL 8 form.
func TestMySQL8GrammarCatches(t *testing.T) {
	refused := []string{
		"DROP INDEX IF EXISTS sluice_jobs_finished ON sluice_jobs",
		"ALTER TABLE t ADD COLUMN IF NOT EXISTS c INT",
		"ALTER TABLE t ADD INDEX IF NOT EXISTS i (c)",
		"ALTER TABLE t DROP COLUMN IF EXISTS c",
		"CREATE INDEX IF NOT EXISTS i ON t (c)",
		"CREATE TRIGGER IF NOT EXISTS tr BEFORE INSERT ON t FOR EACH ROW SET NEW.c = 1",
		"CREATE OR REPLACE TABLE t (c INT)",
		"DELETE FROM t WHERE c = 1 RETURNING c",
		"INSERT INTO t (c) VALUES (1) RETURNING c",
		"CREATE SEQUENCE s",
		"SELECT NEXTVAL(s)",
		"SELECT c FROM t LIMIT ROWS EXAMINED 10",
		"SELECT c FROM t FOR UPDATE WAIT 5",
		"SELECT c FROM t EXCEPT SELECT c FROM u",
		"SELECT c FROM t ORDER BY c OFFSET 1 ROWS FETCH FIRST 2 ROWS ONLY",
		"ANALYZE TABLE t PERSISTENT FOR ALL",
		"CREATE TABLE t (c INT) WITH SYSTEM VERSIONING",
		"ALTER TABLE t ALTER INDEX i IGNORED",
		"CREATE TABLE t (a INET6 NOT NULL)",
		"SELECT JSON_DETAILED(c) FROM t",
		"CREATE TABLE t (id INT, rank INT NOT NULL)",
		"SELECT COUNT(*) AS groups FROM t",
		"SELECT w.id FROM (SELECT id FROM t LIMIT 1) window ORDER BY id",
	}
	for _, q := range refused {
		if len(mysql8Refusals("example", q)) == 0 {
			t.Errorf("not caught: %s", q)
		}
	}
	accepted := []string{
		"DROP TABLE IF EXISTS t",
		"DROP TRIGGER IF EXISTS tr",
		"CREATE TABLE IF NOT EXISTS t (c INT)",
		"DROP INDEX i ON t -- not DROP INDEX IF EXISTS",
		"CREATE OR REPLACE VIEW v AS SELECT 1",
		"SELECT c FROM t FOR UPDATE SKIP LOCKED",
		"SELECT c FROM t FOR UPDATE NOWAIT",
		"SELECT JSON_EXTRACT(c, '$.a') FROM t",
		"SELECT queue FROM t",
		"CREATE TABLE t (id INT, `rank` INT NOT NULL, rows_done BIGINT)",
		"SELECT ROW_NUMBER() OVER (PARTITION BY q ORDER BY c) AS pos FROM (SELECT 1) ranked",
	}
	for _, q := range accepted {
		if got := mysql8Refusals("example", q); len(got) > 0 {
			t.Errorf("MySQL 8 takes %s, but: %v", q, got)
		}
	}
}
