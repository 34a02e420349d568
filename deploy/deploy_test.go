// Package deploy_test checks the drop-in monitoring files: the Prometheus
// alert rules (with promtool) and the Grafana dashboard, against the
// metrics sluice exports.
package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestPrometheusRules runs `promtool check rules` and `promtool test rules`
// (each alert fires on its series and stays quiet on the others).
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found (install Debian's prometheus package; .ci/run does)"
		if testdb.RequireAll() {
			t.Fatal(msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING THE PROMTOOL TESTS: %s\n", msg)
		t.Skip(msg)
	}
	for _, args := range [][]string{{"check", "rules", "sluice-alerts.yml"}, {"test", "rules", "sluice-alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestRulesNameExportedMetrics checks that every alert expression names
// only metrics sluice exports, and that every alert has a unit test.
func TestRulesNameExportedMetrics(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err := os.ReadFile("prometheus/sluice-alerts.yml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &rules))
	tests, err := os.ReadFile("prometheus/sluice-alerts_test.yml")
	require.NoError(t, err)
	exported := exportedSet(t)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			checkQuery(t, exported, r.Alert, r.Expr)
			require.Contains(t, string(tests), "alertname: "+r.Alert+"\n", "alert %s has no unit test", r.Alert)
		}
	}
	require.Equal(t, 11, n, "alert rules")
}

// TestGrafanaNamesExportedMetrics checks every query of the dashboard,
// panels and template variables.
func TestGrafanaNamesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("grafana/sluice.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	exported := exportedSet(t)
	queries := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			queries++
			checkQuery(t, exported, p.Title, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition == "" {
			continue
		}
		m := regexp.MustCompile(`^label_values\((\w+), *\w+\)$`).FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: %q", v.Name, v.Definition)
		require.True(t, exported[m[1]], "variable %s names %s, which sluice does not export", v.Name, m[1])
	}
	require.Greater(t, queries, 20)
}

// exportedSet is every series name of a client's metrics registry, with
// the database pool's; docs/observability.md "Metrics" documents them.
func exportedSet(t *testing.T) map[string]bool {
	d := testdb.Open(t, "sqlite")
	names, err := metrics.New(d.DB()).Exported()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	require.True(t, out["sluice_go_sql_open_connections"], "pool metrics: %v", names)
	require.True(t, out["sluice_job_queue_latency_seconds_bucket"], "histograms: %v", names)
	return out
}

var (
	// Parts of a PromQL expression that hold no metric names.
	strLit    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers  = regexp.MustCompile(`\{[^}]*\}`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	rangeSel  = regexp.MustCompile(`\[[^\]]*\]`)
	ident     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	operators = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// checkQuery fails unless every metric name in expr is exported. What is
// left after removing strings, label matchers, groupings and ranges is
// function names (followed by "("), operators, numbers and metric names.
func checkQuery(t *testing.T, exported map[string]bool, where, expr string) {
	t.Helper()
	e := strLit.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, "")
	e = grouping.ReplaceAllString(e, "")
	e = rangeSel.ReplaceAllString(e, "")
	var names []string
	for _, m := range ident.FindAllStringSubmatch(e, -1) {
		if m[1] != "" || operators[m[0]] {
			continue // a function call or an operator
		}
		names = append(names, m[0])
	}
	require.NotEmpty(t, names, "%s: no metric in %q", where, expr)
	sort.Strings(names)
	for _, n := range names {
		require.True(t, exported[n], "%s: %q names %s, which sluice does not export", where, expr, n)
	}
}
