package drivertest

import (
	"regexp"
	"strings"
)

// planRead is one read of the jobs table in an EXPLAIN plan: the index it
// goes through ("" for none) and whether the rows it yields are sorted
// before anything bounds them.
type planRead struct {
	index  string
	sorted bool
}

var (
	pgIndex     = regexp.MustCompile(`using (\S+) on `)
	sqliteIndex = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)
	mysqlIndex  = regexp.MustCompile(` key=(\S+)`)
)

// planReads finds the reads of the jobs table in a plan from explain. A
// read is sorted when PostgreSQL sorts its rows below any Limit or
// Aggregate node, or when SQLite sorts them in the SELECT that reads them
// (a TEMP B-TREE beside the read); MySQL's sorts are not looked for.
func planReads(name, jobs string, plan []string) []planRead {
	switch name {
	case "postgres":
		return pgReads(jobs, plan)
	case "sqlite":
		return sqliteReads(jobs, plan)
	}
	var out []planRead
	for _, line := range plan {
		if strings.Contains(line, "table="+jobs+" ") {
			out = append(out, planRead{index: submatch(mysqlIndex, line)})
		}
	}
	return out
}

func submatch(re *regexp.Regexp, line string) string {
	if m := re.FindStringSubmatch(line); m != nil && m[1] != "<nil>" {
		return m[1]
	}
	return ""
}

// pgReads reads PostgreSQL's text plan, where a node's line starts with
// "->" indented one step deeper than its parent's (the root has none).
func pgReads(jobs string, plan []string) []planRead {
	type node struct {
		depth int
		text  string
	}
	var nodes []node
	for i, line := range plan {
		text := strings.TrimPrefix(line, "QUERY PLAN=")
		d := strings.Index(text, "->")
		if d < 0 && i > 0 {
			continue // a detail line: Index Cond, Sort Key, InitPlan...
		}
		nodes = append(nodes, node{d, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "->"))})
	}
	var out []planRead
	for i, n := range nodes {
		if !strings.Contains(n.text, " on "+jobs+" ") && !strings.HasSuffix(n.text, " on "+jobs) ||
			strings.HasPrefix(n.text, "Update on") || strings.HasPrefix(n.text, "Delete on") {
			continue
		}
		r := planRead{index: submatch(pgIndex, n.text)}
		// Walk up the parents: the nearest earlier node less deep.
		depth := n.depth
	up:
		for j := i - 1; j >= 0; j-- {
			p := nodes[j]
			if p.depth >= depth {
				continue
			}
			depth = p.depth
			switch {
			case strings.HasPrefix(p.text, "Limit"), strings.Contains(p.text, "Aggregate"):
				break up
			case strings.HasPrefix(p.text, "Sort"), strings.HasPrefix(p.text, "Incremental Sort"):
				r.sorted = true
				break up
			}
		}
		out = append(out, r)
	}
	return out
}

// sqliteReads reads EXPLAIN QUERY PLAN rows (id, parent, detail): a TEMP
// B-TREE under the same parent as a read sorts the rows of that read.
func sqliteReads(jobs string, plan []string) []planRead {
	type row struct{ id, parent, detail string }
	var rows []row
	for _, line := range plan {
		var r row
		for _, f := range strings.SplitN(line, " ", 4) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				r.id = v
			case "parent":
				r.parent = v
			case "detail":
				_, r.detail, _ = strings.Cut(line, "detail=")
			}
		}
		rows = append(rows, r)
	}
	sortsUnder := map[string]bool{}
	for _, r := range rows {
		if strings.HasPrefix(r.detail, "USE TEMP B-TREE FOR") {
			sortsUnder[r.parent] = true
		}
	}
	var out []planRead
	for _, r := range rows {
		if !strings.HasPrefix(r.detail, "SEARCH "+jobs+" ") && !strings.HasPrefix(r.detail, "SCAN "+jobs+" ") && r.detail != "SCAN "+jobs {
			continue
		}
		idx := submatch(sqliteIndex, r.detail)
		if strings.Contains(r.detail, "USING INTEGER PRIMARY KEY") {
			idx = "PRIMARY KEY"
		}
		out = append(out, planRead{index: idx, sorted: sortsUnder[r.parent]})
	}
	return out
}
