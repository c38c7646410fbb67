package dashboards_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/tempo"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/queries"
)

// dir is this package's folder: go test runs a package's tests there.
func dir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func dashboardFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir(t), "grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found: %v", err)
	}
	return files
}

func ruleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir(t), "alerts", "*.rules.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files found: %v", err)
	}
	return files
}

// registerVariants registers only the panel and query types the dashboards use; a panel or query
// of any other type then decodes as unknown, which TestDashboardsStrictDecode rejects.
func registerVariants() {
	rt := cog.NewRuntime()
	rt.RegisterPanelcfgVariant(timeseries.VariantConfig())
	rt.RegisterPanelcfgVariant(stat.VariantConfig())
	rt.RegisterPanelcfgVariant(table.VariantConfig())
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
	rt.RegisterDataqueryVariant(tempo.VariantConfig())
}

// v1Dashboard is the schema of the provisioned dashboards (panels placed by
// gridPos). The SDK deprecates it for dashboardv2.Dashboard, whose elements
// and layouts cannot decode these files.
//
//lint:ignore SA1019 the provisioned dashboards are v1 JSON, which dashboardv2 cannot decode
type v1Dashboard = dashboard.Dashboard

var knownPanelTypes = map[string]bool{"timeseries": true, "stat": true, "table": true}

// strictDecode works around grafana-foundation-sdk v0.0.22 returning an empty, non-nil
// cog.BuildErrors on success.
func strictDecode(raw []byte) (v1Dashboard, error) {
	registerVariants()
	var d v1Dashboard
	err := d.UnmarshalJSONStrict(raw)
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		err = nil
	}
	return d, err
}

func TestDashboardsStrictDecode(t *testing.T) {
	provisioned := provisionedDatasources(t)
	for _, f := range dashboardFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := strictDecode(raw); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			// Strict decoding may leave panels unpopulated (an SDK bug): walk a plain decode.
			var d v1Dashboard
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			if d.Uid == nil || *d.Uid == "" || d.Title == nil {
				t.Error("dashboard needs a fixed uid and a title")
			}
			ids := map[uint32]string{}
			var occupied [][24]bool
			for i, pr := range d.Panels {
				var id uint32
				var title string
				var grid *dashboard.GridPos
				switch {
				case pr.RowPanel != nil:
					id, grid = pr.RowPanel.Id, pr.RowPanel.GridPos
					if pr.RowPanel.Title != nil {
						title = *pr.RowPanel.Title
					}
				case pr.Panel != nil:
					p := pr.Panel
					if p.Id == nil || p.Title == nil {
						t.Errorf("panel %d has no id or title", i)
						continue
					}
					id, title, grid = *p.Id, *p.Title, p.GridPos
					checkPanel(t, p, provisioned)
				default:
					t.Errorf("panel %d is neither a panel nor a row", i)
					continue
				}
				if prev, dup := ids[id]; dup {
					t.Errorf("panels %q and %q share id %d", prev, title, id)
				}
				ids[id] = title
				if grid == nil || grid.W == 0 || grid.H == 0 || grid.X+grid.W > 24 {
					t.Errorf("panel %q has a bad gridPos %+v", title, grid)
					continue
				}
				for y := grid.Y; y < grid.Y+grid.H; y++ {
					for int(y) >= len(occupied) {
						occupied = append(occupied, [24]bool{})
					}
					for x := grid.X; x < grid.X+grid.W; x++ {
						if occupied[y][x] {
							t.Errorf("panel %q overlaps another at (%d,%d)", title, x, y)
						}
						occupied[y][x] = true
					}
				}
			}
		})
	}
}

func checkPanel(t *testing.T, p *dashboard.Panel, provisioned map[string]string) {
	t.Helper()
	title := *p.Title
	if !knownPanelTypes[p.Type] {
		t.Errorf("panel %q: type %q is not one the test registers", title, p.Type)
	}
	if len(p.Targets) == 0 {
		t.Errorf("panel %q has no query", title)
	}
	for _, q := range p.Targets {
		if _, unknown := q.(variants.UnknownDataquery); unknown {
			t.Errorf("panel %q: a query did not decode as a Prometheus or Tempo query: %v", title, q)
			continue
		}
		if err := q.Validate(); err != nil {
			t.Errorf("panel %q: %v", title, err)
		}
		var ds *string
		switch q := q.(type) {
		case *prometheus.Dataquery:
			if q.Expr == "" {
				t.Errorf("panel %q: empty PromQL", title)
			}
			if q.Datasource != nil {
				ds = q.Datasource.Uid
			}
		case *tempo.Dataquery:
			if q.Query == nil || *q.Query == "" {
				t.Errorf("panel %q: empty TraceQL", title)
			}
			if q.Datasource != nil {
				ds = q.Datasource.Uid
			}
		}
		if ds == nil {
			t.Errorf("panel %q: a query names no datasource uid", title)
		} else if _, ok := provisioned[*ds]; !ok {
			t.Errorf("panel %q: datasource uid %q is not provisioned (have %v)", title, *ds, provisioned)
		}
	}
}

// TestStrictDecodeRejectsUnknownFields proves the decode above can fail.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	raw, err := os.ReadFile(dashboardFiles(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	panel := doc["panels"].([]any)[1].(map[string]any)
	panel["options"].(map[string]any)["legend"].(map[string]any)["showLegnd"] = true
	bad, _ := json.Marshal(doc)
	if _, err := strictDecode(bad); err == nil || !strings.Contains(err.Error(), "showLegnd") {
		t.Errorf("a misspelt legend option was accepted: %v", err)
	}
}

// readYAML decodes the YAML file at path (below this folder) into v.
func readYAML(t *testing.T, v any, path ...string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(append([]string{dir(t)}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// provisionedDatasources returns uid → type from the Grafana provisioning file.
func provisionedDatasources(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
			JSONData             map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, &doc, "grafana", "provisioning", "datasources", "datasources.yaml")
	out := map[string]string{}
	for _, d := range doc.Datasources {
		out[d.UID] = d.Type
	}
	return out
}

func TestProvisioning(t *testing.T) {
	ds := provisionedDatasources(t)
	for uid, typ := range map[string]string{"prometheus": "prometheus", "tempo": "tempo", "jaeger": "jaeger"} {
		if ds[uid] != typ {
			t.Errorf("datasource uid %q: type %q, want %q", uid, ds[uid], typ)
		}
	}
	var prov struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Type string
			Options    struct{ Path string }
		}
	}
	readYAML(t, &prov, "grafana", "provisioning", "dashboards", "dashboards.yaml")
	if prov.APIVersion != 1 || len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path == "" {
		t.Errorf("dashboard provider: %+v", prov)
	}
}

// allQueries collects every PromQL expression from the dashboards and rule files.
func allQueries(t *testing.T) []queries.Query {
	t.Helper()
	var all []queries.Query
	for _, f := range dashboardFiles(t) {
		qs, err := queries.FromDashboard(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, qs...)
	}
	for _, f := range ruleFiles(t) {
		qs, err := queries.FromRules(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, qs...)
	}
	if len(all) < 20 {
		t.Fatalf("found only %d queries", len(all))
	}
	return all
}

var budget = regexp.MustCompile(`^\s*vector\([0-9.]+\)\s*$`)

// TestQueriesParse makes sure the reference extraction the end-to-end name check relies on
// understands every shipped expression.
func TestQueriesParse(t *testing.T) {
	for _, q := range allQueries(t) {
		r, err := queries.Parse(q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q.Source, err)
			continue
		}
		// A budget (budgets.rules.yml) is a number, which names no metric.
		if len(r.Selectors) == 0 && !budget.MatchString(q.Expr) {
			t.Errorf("%s: no metric found in %q", q.Source, q.Expr)
		}
	}
}

// TestEveryAlertIsDocumentedAndTested: each alert has a severity, a summary, a description and
// a runbook, and alerts.test.yml has a case where it fires and one where it stays quiet.
func TestEveryAlertIsDocumentedAndTested(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, &tests, "alerts", "alerts.test.yml")
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	var names []string
	for _, r := range loadRules(t, ruleFiles(t)...) {
		if r.Alert == "" {
			continue
		}
		names = append(names, r.Alert)
		if r.Labels["severity"] == "" {
			t.Errorf("%s: no severity label", r.Alert)
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if !fires[r.Alert] {
			t.Errorf("%s: no promtool test where it fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s: no promtool test where it stays quiet", r.Alert)
		}
	}
	sort.Strings(names)
	want := []string{"PiCompactionFailing", "PiCostBudgetFastBurn", "PiCostBudgetSlowBurn", "PiCostBurnHigh", "PiHumanWaitLong", "PiOtelDroppingSpans",
		"PiOtelGatewayLosingData", "PiRetryStorm", "PiRunErrorRatioHigh", "PiRunsUnsettled", "PiSubagentsFailing", "PiToolErrorRatioHigh"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("alerts %v, want %v", names, want)
	}
}

// TestRecordingRulesKeepTheirInterval: the increment rules subtract the value one minute ago, so
// their group must be evaluated exactly once a minute.
func TestRecordingRulesKeepTheirInterval(t *testing.T) {
	for _, r := range loadRules(t, filepath.Join(dir(t), "alerts", "recording.rules.yml")) {
		if r.Record == "" {
			continue
		}
		if r.Interval != "1m" || !strings.Contains(r.Expr, "offset 1m") {
			t.Errorf("%s: group interval %q must match the rule's offset 1m", r.Record, r.Interval)
		}
		if _, err := queries.RecordedLabels(r.Expr); err != nil {
			t.Errorf("%s: %v", r.Record, err)
		}
	}
}

// rule is one rule of a rule file, with its group's evaluation interval.
type rule struct {
	Interval            string
	Alert, Record, Expr string
	Labels, Annotations map[string]string
}

// loadRules returns every rule of the rule files, in order.
func loadRules(t *testing.T, files ...string) []rule {
	t.Helper()
	var out []rule
	for _, f := range files {
		rf, err := queries.LoadRules(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				out = append(out, rule{g.Interval, r.Alert, r.Record, r.Expr, r.Labels, r.Annotations})
			}
		}
	}
	return out
}
