// Package queries lists the PromQL the shipped dashboards and rule files run, and the metric
// names, label matchers and grouping labels each expression references, so tests can check them
// against promtool and against what a real Prometheus holds.
package queries

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Query is one PromQL expression and where it comes from.
type Query struct {
	Source string // file and panel title or rule name
	Raw    string // as written
	Expr   string // with Grafana's variables replaced, ready for Prometheus
	Record string // for a recording rule, the name it records
	// Labels are a recording rule's own labels, which its results carry
	// besides those of its expression (a budget's team).
	Labels map[string]string
}

// grafanaVars are the dashboard variables the shipped dashboards use, with the values a check
// substitutes. Anything else starting with $ is an error: the checks would not see through it.
var grafanaVars = []struct{ name, value string }{
	{"${__rate_interval}", "5m"},
	{"$__rate_interval", "5m"},
	{"${__interval}", "1m"},
	{"$__interval", "1m"},
	{"${__range}", "1h"},
	{"$__range", "1h"},
}

// Substitute replaces Grafana's built-in interval variables.
func Substitute(expr string) (string, error) {
	for _, v := range grafanaVars {
		expr = strings.ReplaceAll(expr, v.name, v.value)
	}
	if i := strings.Index(expr, "$"); i >= 0 {
		return "", fmt.Errorf("unsupported variable at %q", expr[i:])
	}
	return expr, nil
}

// FromDashboard returns every Prometheus target expression of a dashboard JSON file.
func FromDashboard(path string) ([]Query, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Query
	var walkPanels func(panels []any) error
	walkPanels = func(panels []any) error {
		for _, p := range panels {
			panel, ok := p.(map[string]any)
			if !ok {
				continue
			}
			title, _ := panel["title"].(string)
			if nested, ok := panel["panels"].([]any); ok {
				if err := walkPanels(nested); err != nil {
					return err
				}
			}
			targets, _ := panel["targets"].([]any)
			for _, t := range targets {
				target, ok := t.(map[string]any)
				if !ok || dsType(target) != "prometheus" {
					continue
				}
				expr, _ := target["expr"].(string)
				ref, _ := target["refId"].(string)
				src := fmt.Sprintf("%s: panel %q query %s", filepath.Base(path), title, ref)
				if expr == "" {
					return fmt.Errorf("%s: empty expr", src)
				}
				sub, err := Substitute(expr)
				if err != nil {
					return fmt.Errorf("%s: %w", src, err)
				}
				out = append(out, Query{Source: src, Raw: expr, Expr: sub})
			}
		}
		return nil
	}
	panels, _ := doc["panels"].([]any)
	if err := walkPanels(panels); err != nil {
		return nil, err
	}
	return out, nil
}

func dsType(target map[string]any) string {
	ds, _ := target["datasource"].(map[string]any)
	t, _ := ds["type"].(string)
	return t
}

// RuleFile is the subset of a Prometheus rule file the checks read.
type RuleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// LoadRules parses a Prometheus rule file.
func LoadRules(path string) (RuleFile, error) {
	var rf RuleFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return rf, err
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		return rf, fmt.Errorf("%s: %w", path, err)
	}
	return rf, nil
}

// FromRules returns every rule expression of a Prometheus rule file.
func FromRules(path string) ([]Query, error) {
	rf, err := LoadRules(path)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, Query{
				Source: fmt.Sprintf("%s: %s", filepath.Base(path), name),
				Raw:    r.Expr, Expr: r.Expr, Record: r.Record, Labels: r.Labels,
			})
		}
	}
	return out, nil
}

// Matcher is one label matcher of a selector.
type Matcher struct {
	Label, Op, Value string
}

// Selector is one vector selector in an expression.
type Selector struct {
	Text     string // as written, e.g. foo{a="b"}
	Metric   string
	Matchers []Matcher
}

// Refs are the names an expression depends on.
type Refs struct {
	Selectors []Selector
	Grouping  []string // labels in by/without/on/ignoring/group_left/group_right
}

// Metrics returns the distinct metric names of the selectors.
func (r Refs) Metrics() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.Selectors {
		if !seen[s.Metric] {
			seen[s.Metric] = true
			out = append(out, s.Metric)
		}
	}
	sort.Strings(out)
	return out
}

var (
	aggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
		"count_values", "bottomk", "topk", "quantile")
	groupingKeywords = set("by", "without", "on", "ignoring", "group_left", "group_right")
	binaryKeywords   = set("and", "or", "unless", "bool", "offset", "atan2")
)

func set(vs ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// Parse extracts the references of a PromQL expression. It is a lexer, not a parser: enough
// for the expressions this project ships, whose syntax promtool checks separately.
func Parse(expr string) (Refs, error) {
	var refs Refs
	s := expr
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	readString := func() (string, error) {
		q := s[i]
		j := i + 1
		var b strings.Builder
		for j < len(s) && s[j] != q {
			if s[j] == '\\' && q != '`' && j+1 < len(s) {
				j++
			}
			b.WriteByte(s[j])
			j++
		}
		if j >= len(s) {
			return "", fmt.Errorf("unterminated string in %q", expr)
		}
		i = j + 1
		return b.String(), nil
	}
	readIdent := func() string {
		j := i
		for j < len(s) && isIdent(s[j], j > i) {
			j++
		}
		id := s[i:j]
		i = j
		return id
	}
	readMatchers := func() ([]Matcher, error) {
		var ms []Matcher
		i++ // {
		for {
			skipSpace()
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated selector in %q", expr)
			}
			if s[i] == '}' {
				i++
				return ms, nil
			}
			if s[i] == ',' {
				i++
				continue
			}
			label := readIdent()
			if label == "" {
				return nil, fmt.Errorf("bad matcher at %q", s[i:])
			}
			skipSpace()
			var op string
			for _, o := range []string{"=~", "!~", "!=", "="} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("bad matcher operator at %q", s[i:])
			}
			i += len(op)
			skipSpace()
			if i >= len(s) || (s[i] != '"' && s[i] != '\'' && s[i] != '`') {
				return nil, fmt.Errorf("matcher value is not a string at %q", s[i:])
			}
			v, err := readString()
			if err != nil {
				return nil, err
			}
			ms = append(ms, Matcher{Label: label, Op: op, Value: v})
		}
	}
	readLabelList := func() error {
		skipSpace()
		if i >= len(s) || s[i] != '(' {
			return nil // group_left without labels
		}
		i++
		for {
			skipSpace()
			if i >= len(s) {
				return fmt.Errorf("unterminated label list in %q", expr)
			}
			switch s[i] {
			case ')':
				i++
				return nil
			case ',':
				i++
				continue
			}
			l := readIdent()
			if l == "" {
				return fmt.Errorf("bad label list at %q", s[i:])
			}
			refs.Grouping = append(refs.Grouping, l)
		}
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := readString(); err != nil {
				return refs, err
			}
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return refs, fmt.Errorf("unterminated range in %q", expr)
			}
			i += j + 1
		case c >= '0' && c <= '9' || c == '.':
			// Numbers and durations (1m after offset, 1e3, 0.5).
			for i < len(s) && (isIdent(s[i], true) || s[i] == '.') {
				i++
			}
		case c == '{':
			return refs, fmt.Errorf("selector without a metric name in %q", expr)
		case isIdent(c, false):
			start := i
			id := readIdent()
			skipSpace()
			next := byte(0)
			if i < len(s) {
				next = s[i]
			}
			switch {
			case groupingKeywords[id]:
				if err := readLabelList(); err != nil {
					return refs, err
				}
			case aggregations[id], binaryKeywords[id]:
			case next == '(':
				// a function call
			default:
				sel := Selector{Metric: id}
				if next == '{' {
					ms, err := readMatchers()
					if err != nil {
						return refs, err
					}
					sel.Matchers = ms
				}
				sel.Text = strings.TrimSpace(s[start:i])
				refs.Selectors = append(refs.Selectors, sel)
			}
		default:
			i++
		}
	}
	return refs, nil
}

func isIdent(c byte, notFirst bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || notFirst && c >= '0' && c <= '9'
}

// RecordedLabels returns the labels a recording rule's result carries: those of its outermost
// `sum by (...)`. The shipped recording rules all have that shape.
func RecordedLabels(expr string) ([]string, error) {
	t := strings.TrimSpace(expr)
	if strings.HasPrefix(t, "vector(") && strings.HasSuffix(t, ")") {
		return nil, nil // a constant, such as a budget: only the rule's own labels
	}
	if !strings.HasPrefix(t, "sum") {
		return nil, fmt.Errorf("recording rule is not an outer sum: %q", expr)
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "sum"))
	if !strings.HasPrefix(t, "by") {
		return nil, nil // sum without grouping: no labels
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "by"))
	end := strings.IndexByte(t, ')')
	if !strings.HasPrefix(t, "(") || end < 0 {
		return nil, fmt.Errorf("bad by clause in %q", expr)
	}
	var out []string
	for _, l := range strings.Split(t[1:end], ",") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}
