package queries

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		expr      string
		selectors []string
		metrics   []string
		grouping  []string
	}{
		{
			expr:      `sum by (pi_outcome) (increase(traces_span_metrics_calls_total{span_name="invoke_agent pi"}[5m]))`,
			selectors: []string{`traces_span_metrics_calls_total{span_name="invoke_agent pi"}`},
			metrics:   []string{"traces_span_metrics_calls_total"},
			grouping:  []string{"pi_outcome"},
		},
		{
			expr: `histogram_quantile(0.95, sum by (le, gen_ai_tool_name) (rate(traces_span_metrics_duration_seconds_bucket{span_name=~"execute_tool .+"}[5m])))`,
			selectors: []string{
				`traces_span_metrics_duration_seconds_bucket{span_name=~"execute_tool .+"}`,
			},
			metrics:  []string{"traces_span_metrics_duration_seconds_bucket"},
			grouping: []string{"le", "gen_ai_tool_name"},
		},
		{
			expr: `sum (clamp_min(pi_cost_total - pi_cost_total offset 1m, 0) or (pi_cost_total unless pi_cost_total offset 1m))`,
			selectors: []string{
				"pi_cost_total", "pi_cost_total", "pi_cost_total", "pi_cost_total",
			},
			metrics: []string{"pi_cost_total"},
		},
		{
			expr: `a{x="1",y!~'b|c'} - ignoring (le) b{le="+Inf"} > 0 and sum(rate(c[1h])) by (z) or vector(0)`,
			selectors: []string{
				`a{x="1",y!~'b|c'}`, `b{le="+Inf"}`, "c",
			},
			metrics:  []string{"a", "b", "c"},
			grouping: []string{"le", "z"},
		},
		{
			expr:      `sum(sum_over_time(pi:cost_usd:increase1m[1h])) > 25`,
			selectors: []string{"pi:cost_usd:increase1m"},
			metrics:   []string{"pi:cost_usd:increase1m"},
		},
		{
			// Strings may hold braces and keywords without confusing the lexer.
			expr:      `count(x{msg="sum by (a) {b}", q="\"y\""})`,
			selectors: []string{`x{msg="sum by (a) {b}", q="\"y\""}`},
			metrics:   []string{"x"},
		},
	}
	for _, c := range cases {
		r, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		var texts []string
		for _, s := range r.Selectors {
			texts = append(texts, s.Text)
		}
		if !reflect.DeepEqual(texts, c.selectors) {
			t.Errorf("Parse(%q) selectors %q, want %q", c.expr, texts, c.selectors)
		}
		if got := r.Metrics(); !reflect.DeepEqual(got, c.metrics) {
			t.Errorf("Parse(%q) metrics %q, want %q", c.expr, got, c.metrics)
		}
		if !reflect.DeepEqual(r.Grouping, c.grouping) {
			t.Errorf("Parse(%q) grouping %q, want %q", c.expr, r.Grouping, c.grouping)
		}
	}
}

func TestParseMatchers(t *testing.T) {
	r, err := Parse(`m{a="1", b=~"x|y", c!="q\"r"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Matcher{{"a", "=", "1"}, {"b", "=~", "x|y"}, {"c", "!=", `q"r`}}
	if len(r.Selectors) != 1 || !reflect.DeepEqual(r.Selectors[0].Matchers, want) {
		t.Errorf("matchers %+v, want %+v", r.Selectors, want)
	}
}

func TestParseRejects(t *testing.T) {
	for _, e := range []string{`{a="b"}`, `m{a="b"`, `m{a}`, `m[5m`, `sum by (a`} {
		if _, err := Parse(e); err == nil {
			t.Errorf("Parse(%q) succeeded", e)
		}
	}
}

func TestSubstitute(t *testing.T) {
	got, err := Substitute(`rate(x[$__rate_interval]) + increase(y[${__range}])`)
	if err != nil || got != `rate(x[5m]) + increase(y[1h])` {
		t.Errorf("Substitute = %q, %v", got, err)
	}
	if _, err := Substitute(`rate(x{model="$model"}[5m])`); err == nil {
		t.Error("an unknown variable was accepted")
	}
}

func TestRecordedLabels(t *testing.T) {
	got, err := RecordedLabels("sum by (le, a) (\n x\n)")
	if err != nil || !reflect.DeepEqual(got, []string{"le", "a"}) {
		t.Errorf("RecordedLabels = %q, %v", got, err)
	}
	got, err = RecordedLabels("sum (x)")
	if err != nil || got != nil {
		t.Errorf("RecordedLabels(sum) = %q, %v", got, err)
	}
	if _, err := RecordedLabels("rate(x[5m])"); err == nil {
		t.Error("a non-sum recording rule was accepted")
	}
}
