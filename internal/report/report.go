// Package report totals what Pi spent from the spans pi-otel makes of it:
// cost, tokens, runs and errors, by day, week, month, session, model,
// project, team or skill.
//
// It parses nothing of Pi's. A Collector is a span processor: put it on the
// tracer provider of the pipeline that traces session files (pi-otel watch
// --since all, without an exporter), and it adds up the finished runs as
// their root spans state them, pi.cost.total and the gen_ai usage tokens.
// So the report's totals are the traces' own numbers, by construction.
package report

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Grouping is what a report's rows are: a period, or an attribute of the
// runs.
type Grouping string

// Groupings.
const (
	ByDay     Grouping = "day"
	ByWeek    Grouping = "week"
	ByMonth   Grouping = "month"
	BySession Grouping = "session"
	ByModel   Grouping = "model"
	ByProject Grouping = "project"
	ByTeam    Grouping = "team"
	BySkill   Grouping = "skill"
)

// Groupings lists every grouping, in the order help names them.
func Groupings() []Grouping {
	return []Grouping{ByDay, ByWeek, ByMonth, BySession, ByModel, ByProject, ByTeam, BySkill}
}

// split reports whether g splits a run's spend over several rows: a run
// may call several models, and load several skills.
func (g Grouping) split() bool { return g == ByModel || g == BySkill }

// None is the key of a run (or a model call) without a value for the
// grouping: no project, no team, no skill, no model named.
const None = "(none)"

// Totals are one row's numbers. Input is what Pi calls input: the prompt
// tokens that were neither read from nor written to the cache.
type Totals struct {
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	Cost       float64 `json:"cost"`
	Runs       int64   `json:"runs"`
	Errors     int64   `json:"errors"`
}

// Row is one group's totals.
type Row struct {
	Key string `json:"key"`
	Totals
}

// Table is a finished report.
type Table struct {
	By    Grouping
	Rows  []Row
	Total Totals
}

// Options say what a Collector counts and how it groups.
type Options struct {
	By Grouping
	// Loc is the time zone of days, weeks and months; nil is UTC.
	Loc *time.Location
	// Since and Until bound the runs counted by their start: Since
	// included, Until not. Zero leaves that side open.
	Since, Until time.Time
}

// Stats say what a Collector saw besides the runs it counted.
type Stats struct {
	// Runs are the runs seen, Outside those before Since or from Until on.
	Runs, Outside int64
	// Loose are model calls in traces that are not a run of Pi's (none in
	// session files, where every entry belongs to a run); not counted.
	Loose int64
}

// Collector is a span processor that totals runs. Safe for concurrent use.
type Collector struct {
	opts Options

	mu sync.Mutex
	// runOf is the root span of every open span's run; runs holds the
	// model calls of each open run, by (model, skill).
	runOf map[trace.SpanID]trace.SpanID
	runs  map[trace.SpanID]*openRun
	rows  map[string]*acc
	total acc
	stats Stats
}

var _ sdktrace.SpanProcessor = (*Collector)(nil)

// NewCollector returns a Collector.
func NewCollector(opts Options) *Collector {
	opts.Loc = cmp.Or(opts.Loc, time.UTC)
	opts.By = cmp.Or(opts.By, ByDay)
	return &Collector{
		opts:  opts,
		runOf: map[trace.SpanID]trace.SpanID{},
		runs:  map[trace.SpanID]*openRun{},
		rows:  map[string]*acc{},
		total: newAcc(),
	}
}

// openRun is what a run's model calls spent so far, by (model, skill).
type openRun struct {
	calls []call
}

type call struct {
	model, skill string
	usage
}

// usage is spend as spans state it.
type usage struct {
	tokens
	cost float64
}

// tokens are the token counts of some spend.
type tokens struct{ input, output, cacheRead, cacheWrite int64 }

// add adds t's counts, times sign (1 or -1), to s's.
func (s *tokens) add(t tokens, sign int64) {
	s.input += sign * t.input
	s.output += sign * t.output
	s.cacheRead += sign * t.cacheRead
	s.cacheWrite += sign * t.cacheWrite
}

// usageOf reads the gen_ai usage and pi.cost.total of a span.
// gen_ai.usage.input_tokens counts the cached tokens too (the
// conventions' meaning); Pi's input is what is left.
func usageOf(a attrs) usage {
	t := tokens{
		output:     a.int(vocab.GenAIUsageOutputTokensKey),
		cacheRead:  a.int(vocab.GenAIUsageCacheReadKey),
		cacheWrite: a.int(vocab.GenAIUsageCacheCreationKey),
	}
	t.input = a.int(vocab.GenAIUsageInputTokensKey) - t.cacheRead - t.cacheWrite
	return usage{t, a.float(vocab.CostTotalKey)}
}

// OnStart notes which run a span belongs to.
func (c *Collector) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	id := s.SpanContext().SpanID()
	parent := s.Parent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if isRoot(parent) {
		c.runOf[id] = id // a root: its own run, if it is one
		return
	}
	if run, ok := c.runOf[parent.SpanID()]; ok {
		c.runOf[id] = run
	}
}

// OnEnd counts a model call into its run, and a run's root into the rows.
func (c *Collector) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().SpanID()
	c.mu.Lock()
	defer c.mu.Unlock()
	run, ok := c.runOf[id]
	delete(c.runOf, id)
	a := attrs(s.Attributes())
	if _, again := a.get(vocab.RetracedKey); again {
		// A run traced again after a failed export: counted the first
		// time, as the span metrics count it.
		if run == id {
			delete(c.runs, id)
		}
		return
	}
	op := a.str(vocab.GenAIOperationNameKey)
	if op == "chat" {
		if !ok || run == id {
			c.stats.Loose++
			return
		}
		r := c.runs[run]
		if r == nil {
			r = &openRun{}
			c.runs[run] = r
		}
		r.add(call{model: a.str(vocab.GenAIRequestModelKey), skill: a.str(vocab.SkillKey), usage: usageOf(a)})
		return
	}
	if !ok || run != id {
		return
	}
	r := c.runs[id]
	delete(c.runs, id)
	// The span metrics' test for a run of Pi's: a root, not a nested run.
	if _, nested := a.get(vocab.NestedDepthKey); nested || (s.Name() != vocab.SpanRoot && op != "invoke_agent") {
		if r != nil {
			c.stats.Loose += int64(len(r.calls))
		}
		return
	}
	c.stats.Runs++
	start := s.StartTime()
	if (!c.opts.Since.IsZero() && start.Before(c.opts.Since)) || (!c.opts.Until.IsZero() && !start.Before(c.opts.Until)) {
		c.stats.Outside++
		return
	}
	failed := a.str(vocab.OutcomeKey) == string(vocab.OutcomeError) ||
		(a.str(vocab.OutcomeKey) == "" && s.Status().Code == codes.Error)
	c.count(s, a, r, failed)
}

// add merges a call into the run's calls of the same model and skill: a
// run makes hundreds of calls to one or two models.
func (r *openRun) add(c call) {
	for i := range r.calls {
		if x := &r.calls[i]; x.model == c.model && x.skill == c.skill {
			x.tokens.add(c.tokens, 1)
			x.cost += c.cost
			return
		}
	}
	r.calls = append(r.calls, c)
}

// count adds a finished run to the rows. The total takes the root's own
// numbers. A grouping that splits a run (model, skill) gives each of its
// calls' keys what those calls spent, and the root's key what no call
// states (a usage entry, a subagent known only by its sum), so that the
// rows add up to the root exactly.
func (c *Collector) count(s sdktrace.ReadOnlySpan, a attrs, r *openRun, failed bool) {
	root := usageOf(a)
	c.total.add(root)
	c.total.run(failed)
	if !c.opts.By.split() {
		k := c.key(s, a)
		c.row(k, s.StartTime()).add(root)
		c.row(k, s.StartTime()).run(failed)
		return
	}
	rest := exactUsage(root)
	touched := map[string]bool{}
	if r != nil {
		for _, x := range r.calls {
			k := cmp.Or(x.skill, None)
			if c.opts.By == ByModel {
				k = cmp.Or(x.model, None)
			}
			c.row(k, s.StartTime()).add(x.usage)
			rest.sub(x.usage)
			touched[k] = true
		}
	}
	k := None
	if c.opts.By == ByModel {
		k = cmp.Or(a.str(vocab.GenAIRequestModelKey), None)
	}
	if !rest.zero() || len(touched) == 0 {
		c.row(k, s.StartTime()).addExact(rest)
		touched[k] = true
	}
	for k := range touched {
		c.row(k, s.StartTime()).run(failed)
	}
}

// key is a run's row for a grouping that does not split it.
func (c *Collector) key(s sdktrace.ReadOnlySpan, a attrs) string {
	t := s.StartTime().In(c.opts.Loc)
	switch c.opts.By {
	case ByWeek:
		// Weeks start on Monday (ISO 8601); the row is that Monday.
		back := (int(t.Weekday()) + 6) % 7
		return time.Date(t.Year(), t.Month(), t.Day()-back, 0, 0, 0, 0, c.opts.Loc).Format(time.DateOnly)
	case ByMonth:
		return t.Format("2006-01")
	case BySession:
		return cmp.Or(a.str(vocab.GenAIConversationIDKey), None)
	case ByProject:
		return cmp.Or(a.str(vocab.ProjectKey), None)
	case ByTeam:
		return cmp.Or(a.str(vocab.TeamKey), None)
	}
	return t.Format(time.DateOnly)
}

func (c *Collector) row(k string, start time.Time) *acc {
	a := c.rows[k]
	if a == nil {
		x := newAcc()
		a = &x
		a.first = start
		c.rows[k] = a
	}
	if start.Before(a.first) {
		a.first = start
	}
	return a
}

// Sampler narrows next to the spans the Collector reads. A grouping
// that does not split runs reads only their roots, so the rest (nine
// spans in ten) need not be recorded: about a quarter of a report's
// time. A root is what OnStart takes for one; whatever next drops stays
// dropped. A grouping that splits runs reads their model calls, found
// through every span between a call and its root: next is kept.
func (c *Collector) Sampler(next sdktrace.Sampler) sdktrace.Sampler {
	if c.opts.By.split() {
		return next
	}
	return rootsOnly{next}
}

// isRoot reports whether a span with this parent is a root: it has no
// parent, or its parent is another process's (a caller's TRACEPARENT).
func isRoot(parent trace.SpanContext) bool { return !parent.IsValid() || parent.IsRemote() }

type rootsOnly struct{ next sdktrace.Sampler }

func (r rootsOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	res := r.next.ShouldSample(p)
	if !isRoot(trace.SpanContextFromContext(p.ParentContext)) {
		res.Decision, res.Attributes = sdktrace.Drop, nil
	}
	return res
}

func (r rootsOnly) Description() string { return "RootsOnly{" + r.next.Description() + "}" }

// Shutdown and ForceFlush have nothing to do: every span is counted as it
// ends.
func (*Collector) Shutdown(context.Context) error   { return nil }
func (*Collector) ForceFlush(context.Context) error { return nil }

// Stats returns what the Collector saw.
func (c *Collector) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Table returns the report so far. Rows of periods come in time order,
// sessions by their first run; the others by cost, the largest first.
func (c *Collector) Table() Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := Table{By: c.opts.By, Total: c.total.totals(), Rows: make([]Row, 0, len(c.rows))}
	first := map[string]time.Time{}
	for k, a := range c.rows {
		t.Rows = append(t.Rows, Row{Key: k, Totals: a.totals()})
		first[k] = a.first
	}
	// Keys are unique: every order below is total.
	slices.SortFunc(t.Rows, func(a, b Row) int {
		byKey := strings.Compare(a.Key, b.Key)
		switch c.opts.By {
		case ByDay, ByWeek, ByMonth:
			return byKey
		case BySession:
			return cmp.Or(first[a.Key].Compare(first[b.Key]), byKey)
		}
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), byKey) // costs are finite (big.Float)
	})
	return t
}

// acc adds up one row. Costs are added exactly (package big), so that the
// total is the exact sum of the roots' pi.cost.total, rounded once: the
// same number whatever order the runs came in, and whatever the grouping.
type acc struct {
	exact
	runs, errors int64
	first        time.Time
}

// exactPrec holds any sum of float64 values exactly: their exponents
// span 2,098 bits, plus room for carries.
const exactPrec = 2200

func newAcc() acc { return acc{exact: exact{cost: new(big.Float).SetPrec(exactPrec)}} }

func (a *acc) add(u usage) { a.addExact(exactUsage(u)) }

func (a *acc) addExact(u exact) {
	a.tokens.add(u.tokens, 1)
	a.cost.Add(a.cost, u.cost)
}

func (a *acc) run(failed bool) {
	a.runs++
	if failed {
		a.errors++
	}
}

func (a *acc) totals() Totals {
	cost, _ := a.cost.Float64()
	return Totals{Input: a.input, Output: a.output, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite,
		Cost: cost, Runs: a.runs, Errors: a.errors}
}

// exact is usage with its cost held exactly: what a run's calls leave of
// its root's total.
type exact struct {
	tokens
	cost *big.Float
}

func exactUsage(u usage) exact { return exact{u.tokens, exactFloat(u.cost)} }

func (e *exact) sub(u usage) {
	e.tokens.add(u.tokens, -1)
	e.cost.Sub(e.cost, exactFloat(u.cost))
}

func (e *exact) zero() bool { return e.tokens == (tokens{}) && e.cost.Sign() == 0 }

func exactFloat(v float64) *big.Float { return new(big.Float).SetPrec(exactPrec).SetFloat64(v) }

// attrs are a span's attributes, looked up by key: a few dozen at most,
// so a scan beats a map.
type attrs []attribute.KeyValue

func (a attrs) get(k attribute.Key) (attribute.Value, bool) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i].Key == k {
			return a[i].Value, true
		}
	}
	return attribute.Value{}, false
}

func (a attrs) str(k attribute.Key) string {
	if v, ok := a.get(k); ok && v.Type() == attribute.STRING {
		return v.AsString()
	}
	return ""
}

func (a attrs) int(k attribute.Key) int64 { return number[int64](a, k) }

func (a attrs) float(k attribute.Key) float64 { return number[float64](a, k) }

// number reads a numeric attribute, int or float, as an N (a float is
// truncated to an int); 0 when there is none.
func number[N int64 | float64](a attrs, k attribute.Key) N {
	v, _ := a.get(k)
	switch v.Type() {
	case attribute.INT64:
		return N(v.AsInt64())
	case attribute.FLOAT64:
		return N(v.AsFloat64())
	}
	return 0
}

// ParseGrouping reads a --by value.
func ParseGrouping(s string) (Grouping, error) {
	for _, g := range Groupings() {
		if strings.EqualFold(s, string(g)) {
			return g, nil
		}
	}
	names := make([]string, 0, 8)
	for _, g := range Groupings() {
		names = append(names, string(g))
	}
	return "", fmt.Errorf("want one of %s", strings.Join(names, ", "))
}
