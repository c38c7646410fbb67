package dashboards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/queries"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// vocabulary indexes package vocab and the metric names by the forms a
// query or a Collector config uses.
type vocabulary struct {
	spans   map[string]bool          // exact span names
	kinds   []string                 // span name prefixes ("chat ")
	keys    map[string]attribute.Key // Prometheus label ("pi_outcome") → key
	dotted  map[string]bool          // attribute keys as written ("pi.outcome")
	metrics map[string]bool          // Prometheus base names ("pi_cost")
	values  map[attribute.Key]map[string]bool
}

func newVocabulary() vocabulary {
	v := vocabulary{
		spans: map[string]bool{}, keys: map[string]attribute.Key{}, dotted: map[string]bool{},
		metrics: map[string]bool{}, values: map[attribute.Key]map[string]bool{},
	}
	for _, s := range vocab.Spans() {
		v.spans[s] = true
	}
	for _, k := range vocab.Families() {
		v.kinds = append(v.kinds, k.Prefix())
	}
	for _, k := range vocab.Keys() {
		v.keys[promName(string(k))] = k
		v.dotted[string(k)] = true
		if vals := vocab.Values(k); vals != nil {
			v.values[k] = map[string]bool{}
			for _, x := range vals {
				v.values[k][x] = true
			}
		}
	}
	for _, m := range vocab.Metrics() {
		v.metrics[promName(m)] = true
	}
	return v
}

func promName(s string) string { return strings.NewReplacer(".", "_", "-", "_").Replace(s) }

// span reports whether a span_name matcher can match a span pi-otel makes.
func (v vocabulary) span(op, value string) bool {
	switch op {
	case "=", "!=":
		if v.spans[value] {
			return true
		}
		for _, k := range v.kinds {
			if strings.HasPrefix(value, k) && len(value) > len(k) {
				return true
			}
		}
	case "=~", "!~":
		for _, alt := range strings.Split(value, "|") {
			ok := v.spans[alt]
			for _, k := range v.kinds {
				ok = ok || alt == k+".+" || alt == k+".*"
			}
			if !ok {
				return false
			}
		}
		return true
	}
	return false
}

// metric reports whether a pi_* metric name comes from one of pi-otel's instruments, after
// the suffixes the Prometheus exporter adds.
func (v vocabulary) metric(name string) bool {
	for _, suffix := range []string{"_total", "_bucket", "_sum", "_count", ""} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		for _, unit := range []string{"_seconds", "_USD", ""} {
			if b, ok := strings.CutSuffix(base, unit); ok && v.metrics[b] {
				return true
			}
		}
	}
	return false
}

// TestQueriesNameOnlyTheVocabulary: every span name, pi.* label, closed label value and pi_*
// metric that a dashboard or rule query mentions exists in package vocab or among pi-otel's
// instruments, so a renamed attribute cannot leave a panel silently empty.
func TestQueriesNameOnlyTheVocabulary(t *testing.T) {
	v := newVocabulary()
	checked := 0
	for _, q := range allQueries(t) {
		r, err := queries.Parse(q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Source, err)
		}
		for _, sel := range r.Selectors {
			if strings.HasPrefix(sel.Metric, "pi_") && !strings.Contains(sel.Metric, ":") {
				checked++
				if !v.metric(sel.Metric) {
					t.Errorf("%s: metric %s is not one pi-otel records", q.Source, sel.Metric)
				}
			}
			for _, m := range sel.Matchers {
				switch {
				case m.Label == "span_name":
					checked++
					if !v.span(m.Op, m.Value) {
						t.Errorf("%s: span_name%s%q matches no span pi-otel makes", q.Source, m.Op, m.Value)
					}
				case strings.HasPrefix(m.Label, "pi_"):
					checked++
					key, ok := v.keys[m.Label]
					if !ok {
						t.Errorf("%s: label %s is no pi.* attribute", q.Source, m.Label)
						continue
					}
					if allowed := v.values[key]; allowed != nil {
						for _, x := range strings.Split(m.Value, "|") {
							if !allowed[x] {
								t.Errorf("%s: %s never takes the value %q", q.Source, key, x)
							}
						}
					}
				}
			}
		}
		for _, g := range r.Grouping {
			if strings.HasPrefix(g, "pi_") {
				checked++
				if _, ok := v.keys[g]; !ok {
					t.Errorf("%s: grouping label %s is no pi.* attribute", q.Source, g)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d names checked: the extraction is broken", checked)
	}
}

var traceQLName = regexp.MustCompile(`\bname\s*=\s*"([^"]*)"`)

// TestTraceQLNamesSpans: the dashboards' TraceQL searches name real spans.
func TestTraceQLNamesSpans(t *testing.T) {
	v := newVocabulary()
	n := 0
	for _, f := range dashboardFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Panels []struct {
				Title   string
				Targets []struct{ Query string }
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, p := range doc.Panels {
			for _, tg := range p.Targets {
				for _, m := range traceQLName.FindAllStringSubmatch(tg.Query, -1) {
					n++
					if !v.span("=", m[1]) {
						t.Errorf("%s: panel %q searches for span %q, which pi-otel never makes", filepath.Base(f), p.Title, m[1])
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no TraceQL span name found: the extraction is broken")
	}
}

var ottlName = regexp.MustCompile(`\bname\s*==\s*"([^"]*)"`)

// TestGatewayNamesTheVocabulary: the gateway's tail-sampling conditions name real spans and its
// spanmetrics dimensions are real attributes (a pi.* one from vocab, the rest the GenAI
// conventions the mapper sets).
func TestGatewayNamesTheVocabulary(t *testing.T) {
	v := newVocabulary()
	raw, err := os.ReadFile(filepath.Join(dir(t), "..", "collector", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spans := ottlName.FindAllStringSubmatch(string(raw), -1)
	if len(spans) == 0 {
		t.Fatal("no span name in the tail-sampling policies: the extraction is broken")
	}
	for _, m := range spans {
		if !v.span("=", m[1]) {
			t.Errorf("gateway.yaml samples span %q, which pi-otel never makes", m[1])
		}
	}
	var cfg struct {
		Connectors struct {
			Spanmetrics struct {
				Dimensions []struct{ Name string }
			} `yaml:"span_metrics"`
		}
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	dims := cfg.Connectors.Spanmetrics.Dimensions
	if len(dims) == 0 {
		t.Fatal("no spanmetrics dimensions found")
	}
	genAI := []string{"gen_ai.provider.name", "gen_ai.request.model", "gen_ai.tool.name"}
	for _, d := range dims {
		if !v.dotted[d.Name] && !slices.Contains(genAI, d.Name) {
			t.Errorf("gateway.yaml: spanmetrics dimension %q is not an attribute pi-otel sets", d.Name)
		}
	}
}
