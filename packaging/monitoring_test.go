// Package packaging holds no code: its tests check what packaging/ ships
// against the programs (the Prometheus rules and the Grafana dashboard
// name only metrics the programs export; promtool accepts the rules and
// their unit tests pass).
package packaging

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aicloud/gpusuite/internal/testkit"
)

const (
	rulesFile     = "prometheus/gpusuite-rules.yml"
	rulesTestFile = "prometheus/gpusuite-rules_test.yml"
	dashboardFile = "grafana/gpusuite.json"
)

// ourMetric is a gpusuite metric name in PromQL or Go: the agent's
// gpusuite_*, serve's gpuacct_*, nfs-sync's nfssync_*.
var ourMetric = regexp.MustCompile(`\b(?:gpusuite|gpuacct|nfssync)_[a-z0-9_]+\b`)

// exported is every metric name the programs register, read from their
// sources: the string literals that name a metric (Name: "...",
// NewDesc("...", gdesc("...")), and gpusuite_build_info, which
// versioncollector names from its "gpusuite" namespace.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	literal := regexp.MustCompile(`"((?:gpusuite|gpuacct|nfssync)_[a-z0-9_]+)"`)
	names := map[string]bool{"gpusuite_build_info": true}
	for _, dir := range []string{"../internal", "../gpuacct", "../nfs-sync"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
				names[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, must := range []string{"gpusuite_gpu_utilization_percent", "gpuacct_ingest_lag_seconds", "gpuacct_board_free_gpus", "nfssync_pending_files"} {
		if !names[must] {
			t.Fatalf("reading the registered metric names found no %s: the reader is broken", must)
		}
	}
	// A histogram's series carry suffixes.
	for n := range names {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			names[n+s] = true
		}
	}
	return names
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// dashboardExprs is every PromQL expression of the dashboard: its panels'
// targets and its template variables' queries.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
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
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			exprs[p.Title+" #"+string(rune('A'+i))] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs["variable "+v.Name] = v.Definition
		}
	}
	return exprs
}

// TestMonitoringNamesExportedMetrics fails when a rule or a dashboard
// panel names a metric no program exports (renamed, misspelt, dropped),
// or a recorded series no rule records.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	names := exported(t)
	rf := readRules(t)
	recorded := map[string]bool{}
	exprs := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
				exprs["record "+r.Record] = r.Expr
			} else {
				exprs["alert "+r.Alert] = r.Expr
			}
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%s holds %d rules", rulesFile, len(exprs))
	}
	dash := dashboardExprs(t)
	if len(dash) < 20 {
		t.Fatalf("%s holds %d queries", dashboardFile, len(dash))
	}
	for k, v := range dash {
		exprs["dashboard "+k] = v
	}
	recordedName := regexp.MustCompile(`\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b`)
	var keys []string
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		expr := exprs[k]
		found := ourMetric.FindAllString(expr, -1)
		for _, r := range recordedName.FindAllString(expr, -1) {
			if !recorded[r] {
				t.Errorf("%s: %q names %s, which no rule records", k, expr, r)
			}
			found = append(found, r)
		}
		if len(found) == 0 {
			t.Errorf("%s: %q names no gpusuite metric", k, expr)
		}
		for _, n := range ourMetric.FindAllString(expr, -1) {
			if !names[n] {
				t.Errorf("%s: %q names %s, which no program exports", k, expr, n)
			}
		}
	}
}

// TestPromtool checks the rules and runs their unit tests with Debian's
// promtool (package prometheus, installed by make deps).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testkit.Missing(t, "promtool not found (%v): apt-get install prometheus, or run make deps", err)
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
