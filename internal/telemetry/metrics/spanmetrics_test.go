package metrics_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/testutil/metricstest"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// harness is a real TracerProvider whose only processor is SpanMetrics, reading into a
// ManualReader.
type harness struct {
	t      *testing.T
	tracer trace.Tracer
	reader *sdkmetric.ManualReader
	schema string // the scope's schema: the latest's with the opt-in
	sm     *metrics.SpanMetrics
}

func newHarness(t *testing.T, opts ...metrics.Option) *harness {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sm, err := metrics.NewSpanMetrics(mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sm))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	schema := vocab.SchemaURL
	if len(opts) > 0 { // the one option there is: the latest conventions
		schema = vocab.LatestSchemaURL
	}
	return &harness{t: t, tracer: tp.Tracer("test"), reader: reader, schema: schema, sm: sm}
}

// collected maps metric name → data.
type collected map[string]metricdata.Metrics

func (h *harness) collect() collected {
	h.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		h.t.Fatal(err)
	}
	out := collected{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != metrics.ScopeName || sm.Scope.SchemaURL != h.schema {
			h.t.Errorf("scope %q schema %q, want %q and %q", sm.Scope.Name, sm.Scope.SchemaURL, metrics.ScopeName, h.schema)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// span ends a span with the given name, attributes, status and duration.
func (h *harness) span(name string, d time.Duration, status codes.Code, kvs ...attribute.KeyValue) {
	start := time.Unix(1_700_000_000, 0)
	_, s := h.tracer.Start(context.Background(), name, trace.WithTimestamp(start), trace.WithAttributes(kvs...))
	if status != codes.Unset {
		s.SetStatus(status, "")
	}
	s.End(trace.WithTimestamp(start.Add(d)))
}

func key(attrs attribute.Set) string {
	var parts []string
	for _, kv := range attrs.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// sums returns a counter's values by attribute set.
func (c collected) sums(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return gather(t, c, name, "a sum", sumPoints[int64], sumPoints[float64])
}

func sumPoints[N int64 | float64](data metricdata.Aggregation, out map[string]float64) bool {
	d, ok := data.(metricdata.Sum[N])
	for _, p := range d.DataPoints {
		out[key(p.Attributes)] += float64(p.Value)
	}
	return ok
}

type histo struct {
	count uint64
	sum   float64
}

// histograms returns a histogram's counts and sums by attribute set.
func (c collected) histograms(t *testing.T, name string) map[string]histo {
	t.Helper()
	return gather(t, c, name, "a histogram", histoPoints[int64], histoPoints[float64])
}

func histoPoints[N int64 | float64](data metricdata.Aggregation, out map[string]histo) bool {
	d, ok := data.(metricdata.Histogram[N])
	for _, p := range d.DataPoints {
		out[key(p.Attributes)] = histo{p.Count, float64(p.Sum)}
	}
	return ok
}

// gather reads the named metric's points by attribute set with the first
// of reads that takes its aggregation (kind, as the failure names it).
func gather[V any](t *testing.T, c collected, name, kind string, reads ...func(metricdata.Aggregation, map[string]V) bool) map[string]V {
	t.Helper()
	m, ok := c[name]
	if !ok {
		t.Fatalf("metric %s not collected; have %v", name, c.names())
	}
	out := map[string]V{}
	for _, read := range reads {
		if read(m.Data, out) {
			return out
		}
	}
	t.Fatalf("%s is %T, want %s", name, m.Data, kind)
	return nil
}

func (c collected) names() []string {
	var n []string
	for k := range c {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func wantEqual[V comparable](t *testing.T, what string, got, want map[string]V) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d series %v, want %d %v", what, len(got), got, len(want), want)
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s{%s} = %v (present %v), want %v; all: %v", what, k, g, ok, w, got)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

func TestFullRunFromSpanTree(t *testing.T) {
	h := newHarness(t)
	metricstest.Emit(context.Background(), h.tracer, metricstest.Run{
		Outcome: "ok", Provider: "anthropic", Model: "claude-x",
		Turns: []metricstest.Turn{
			{
				Chat: metricstest.Chat{InputTokens: 1200, OutputTokens: 300, Cost: 0.25, TimeToFirstChunk: 400 * time.Millisecond, Duration: 2 * time.Second},
				Tools: []metricstest.Tool{
					{Name: "bash", Duration: 1500 * time.Millisecond},
					{Name: "read", Error: true, Duration: 20 * time.Millisecond},
				},
			},
			{Chat: metricstest.Chat{InputTokens: 1800, OutputTokens: 50, Cost: 0.5, Duration: time.Second}},
		},
		Retries:     []string{"failed", "success"},
		Compactions: []metricstest.Compaction{{Reason: "threshold", Outcome: "ok"}},
	})
	c := h.collect()

	wantEqual(t, "pi.runs", c.sums(t, vocab.MetricRuns), map[string]float64{"pi.outcome=ok": 1})
	wantEqual(t, "pi.turns", c.sums(t, vocab.MetricTurns), map[string]float64{"": 2})
	wantEqual(t, "pi.tool.calls", c.sums(t, vocab.MetricToolCalls), map[string]float64{
		"error=false,gen_ai.tool.name=bash": 1,
		"error=true,gen_ai.tool.name=read":  1,
	})
	wantEqual(t, "pi.retries", c.sums(t, vocab.MetricRetries), map[string]float64{
		"pi.retry.outcome=failed": 1, "pi.retry.outcome=success": 1,
	})
	wantEqual(t, "pi.compactions", c.sums(t, vocab.MetricCompactions), map[string]float64{
		"pi.compaction.outcome=ok,pi.compaction.reason=threshold": 1,
	})
	cost := c.sums(t, vocab.MetricCost)
	if v := cost["gen_ai.agent.name=pi,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x"]; !near(v, 0.75) || len(cost) != 1 {
		t.Errorf("pi.cost = %v, want 0.75 for anthropic/claude-x only", cost)
	}

	tokens := c.histograms(t, vocab.MetricTokenUsage)
	base := "gen_ai.agent.name=pi,gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x,gen_ai.token.type="
	wantEqual(t, "gen_ai.client.token.usage", tokens, map[string]histo{
		base + "input":  {2, 3000},
		base + "output": {2, 350},
	})
	dur := c.histograms(t, vocab.MetricOperationDuration)
	wantEqual(t, "gen_ai.client.operation.duration", dur, map[string]histo{
		"gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x": {2, 3},
	})
	ttfc := c.histograms(t, vocab.MetricTimeToFirstChunk)
	wantEqual(t, "time_to_first_chunk", ttfc, map[string]histo{
		"gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x": {1, 0.4},
	})
	tools := c.histograms(t, vocab.MetricToolDuration)
	wantEqual(t, "pi.tool.duration", tools, map[string]histo{
		"error=false,gen_ai.tool.name=bash": {1, 1.5},
		"error=true,gen_ai.tool.name=read":  {1, 0.02},
	})
	runs := c.histograms(t, vocab.MetricRunDuration)
	if r, ok := runs["pi.outcome=ok"]; !ok || r.count != 1 || r.sum < 4.5 {
		t.Errorf("pi.run.duration = %v, want one run of at least 4.5 s (the chat and tool time inside it)", runs)
	}
	if _, ok := c[vocab.MetricRPCCommands]; ok {
		t.Errorf("pi.rpc.commands recorded without any RPC span")
	}
}

func TestChatErrorCarriesErrorType(t *testing.T) {
	h := newHarness(t)
	chat := func(errType string, status codes.Code) {
		kvs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", "openai"),
			attribute.String("gen_ai.request.model", "gpt-test"),
			attribute.Int64("gen_ai.usage.input_tokens", 10),
			attribute.Int64("gen_ai.usage.output_tokens", 0),
		}
		if errType != "" {
			kvs = append(kvs, attribute.String("error.type", errType))
		}
		h.span("chat gpt-test", 500*time.Millisecond, status, kvs...)
	}
	chat("", codes.Unset)
	chat("rate_limited", codes.Error)
	// Free text in error.type must not become a label value.
	chat("Error: 429 Too Many Requests for https://example/v1", codes.Error)
	// A status error with no error.type still gets one, as the convention requires.
	chat("", codes.Error)

	base := "gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=gpt-test"
	wantEqual(t, "operation.duration", h.collect().histograms(t, vocab.MetricOperationDuration), map[string]histo{
		base:                              {1, 0.5},
		"error.type=rate_limited," + base: {1, 0.5},
		"error.type=_OTHER," + base:       {2, 1},
	})
}

func TestOutcomesAreClosedSets(t *testing.T) {
	h := newHarness(t)
	root := func(outcome string, status codes.Code) {
		kvs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "invoke_agent")}
		if outcome != "" {
			kvs = append(kvs, vocab.OutcomeKey.String(outcome))
		}
		h.span(vocab.SpanRoot, 3*time.Second, status, kvs...)
	}
	root("ok", codes.Unset)
	root("error", codes.Error)
	root("aborted", codes.Unset)
	root("unsettled", codes.Error)
	root("something new", codes.Unset)
	root("", codes.Error) // no pi.outcome: the status decides
	root("", codes.Unset)

	h.span(vocab.SpanRetry, time.Second, codes.Error, vocab.RetryOutcomeKey.String("exhausted"))
	h.span(vocab.SpanRetry, time.Second, codes.Unset, vocab.RetryOutcomeKey.String("bogus"))
	h.span(vocab.SpanCompaction, time.Second, codes.Error,
		vocab.CompactionReasonKey.String("overflow"), vocab.CompactionOutcomeKey.String("error"))
	h.span(vocab.SpanCompaction, time.Second, codes.Error, vocab.CompactionReasonKey.String("a reason with spaces"))

	c := h.collect()
	wantEqual(t, "pi.runs", c.sums(t, vocab.MetricRuns), map[string]float64{
		"pi.outcome=ok": 2, "pi.outcome=error": 2, "pi.outcome=aborted": 1,
		"pi.outcome=unsettled": 1, "pi.outcome=_OTHER": 1,
	})
	wantEqual(t, "pi.run.duration count", countsOf(c.histograms(t, vocab.MetricRunDuration)), map[string]uint64{
		"pi.outcome=ok": 2, "pi.outcome=error": 2, "pi.outcome=aborted": 1,
		"pi.outcome=unsettled": 1, "pi.outcome=_OTHER": 1,
	})
	wantEqual(t, "pi.retries", c.sums(t, vocab.MetricRetries), map[string]float64{
		"pi.retry.outcome=exhausted": 1, "pi.retry.outcome=_OTHER": 1,
	})
	wantEqual(t, "pi.compactions", c.sums(t, vocab.MetricCompactions), map[string]float64{
		"pi.compaction.outcome=error,pi.compaction.reason=overflow": 1,
		"pi.compaction.outcome=error,pi.compaction.reason=_OTHER":   1,
	})
}

func countsOf(m map[string]histo) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		out[k] = v.count
	}
	return out
}

// A compaction's summary call costs money too (compaction_end result.usage.cost.total): it
// counts in pi.cost, under the span's model if it names one, else under the unknown labels.
func TestCompactionCostCounts(t *testing.T) {
	h := newHarness(t)
	h.span(vocab.SpanCompaction, time.Second, codes.Unset,
		vocab.CompactionReasonKey.String("threshold"), vocab.CompactionOutcomeKey.String("ok"),
		vocab.CostTotalKey.Float64(0.004))
	h.span(vocab.SpanCompaction, time.Second, codes.Unset,
		vocab.CompactionReasonKey.String("overflow"), vocab.CompactionOutcomeKey.String("ok"),
		vocab.CostTotalKey.Float64(0.001),
		attribute.String("gen_ai.provider.name", "anthropic"), attribute.String("gen_ai.request.model", "claude-x"))
	h.span(vocab.SpanCompaction, time.Second, codes.Error,
		vocab.CompactionReasonKey.String("overflow"), vocab.CompactionOutcomeKey.String("error"))

	cost := h.collect().sums(t, vocab.MetricCost)
	if len(cost) != 2 || !near(cost["gen_ai.agent.name=pi,gen_ai.provider.name=_OTHER,gen_ai.request.model=unknown"], 0.004) ||
		!near(cost["gen_ai.agent.name=pi,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x"], 0.001) {
		t.Errorf("pi.cost = %v, want 0.004 under _OTHER/unknown and 0.001 under anthropic/claude-x", cost)
	}
}

// A session file's usage and branch-summary entries are model calls outside any turn: the
// mapper records them as events of the root, and their cost counts in pi.cost, under the
// entry's provider and model if it names them.
func TestSessionEntryCostCounts(t *testing.T) {
	h := newHarness(t)
	_, root := h.tracer.Start(context.Background(), vocab.SpanRoot)
	root.AddEvent(vocab.EventUsage, trace.WithAttributes(vocab.UsageKindKey.String("title"),
		attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "gpt-x"),
		vocab.CostTotalKey.Float64(0.002)))
	root.AddEvent(vocab.EventBranchSummary, trace.WithAttributes(vocab.CostTotalKey.Float64(0.003)))
	root.AddEvent(vocab.EventLabel, trace.WithAttributes(vocab.CostTotalKey.Float64(7)))
	root.End()

	cost := h.collect().sums(t, vocab.MetricCost)
	if len(cost) != 2 || !near(cost["gen_ai.agent.name=pi,gen_ai.provider.name=openai,gen_ai.request.model=gpt-x"], 0.002) ||
		!near(cost["gen_ai.agent.name=pi,gen_ai.provider.name=_OTHER,gen_ai.request.model=unknown"], 0.003) {
		t.Errorf("pi.cost = %v, want 0.002 under openai/gpt-x and 0.003 under _OTHER/unknown", cost)
	}
}

func TestRPCAndExtensionUI(t *testing.T) {
	h := newHarness(t)
	h.span(vocab.SpanRPC.Name("prompt"), 10*time.Millisecond, codes.Unset,
		vocab.RPCCommandKey.String("prompt"), vocab.RPCSuccessKey.Bool(true))
	h.span(vocab.SpanRPC.Name("prompt"), 10*time.Millisecond, codes.Unset,
		vocab.RPCCommandKey.String("prompt"), vocab.RPCSuccessKey.Bool(true))
	h.span(vocab.SpanRPC.Name("set_model"), 10*time.Millisecond, codes.Error,
		vocab.RPCCommandKey.String("set_model"), vocab.RPCSuccessKey.Bool(false))
	// Without the attributes the name and status still say what happened.
	h.span(vocab.SpanRPC.Name("abort"), 10*time.Millisecond, codes.Unset)

	h.span(vocab.SpanExtensionUI.Name("confirm"), 12*time.Second, codes.Unset,
		vocab.UIMethodKey.String("confirm"), vocab.UIOutcomeKey.String("confirmed"))
	h.span(vocab.SpanExtensionUI.Name("select"), 90*time.Second, codes.Unset,
		vocab.UIMethodKey.String("select"), vocab.UIOutcomeKey.String("timed_out"))
	h.span(vocab.SpanExtensionUI.Name("select"), 30*time.Second, codes.Unset,
		vocab.UIMethodKey.String("select"), vocab.UIOutcomeKey.String("timed_out"))

	c := h.collect()
	wantEqual(t, "pi.rpc.commands", c.sums(t, vocab.MetricRPCCommands), map[string]float64{
		"pi.rpc.command=prompt,pi.rpc.success=true":     2,
		"pi.rpc.command=set_model,pi.rpc.success=false": 1,
		"pi.rpc.command=abort,pi.rpc.success=true":      1,
	})
	wantEqual(t, "pi.extension_ui.wait", c.histograms(t, vocab.MetricExtensionUIWait), map[string]histo{
		"pi.ui.method=confirm,pi.ui.outcome=confirmed": {1, 12},
		"pi.ui.method=select,pi.ui.outcome=timed_out":  {2, 120},
	})
}

func TestSpansOutsideTheModelRecordNothing(t *testing.T) {
	h := newHarness(t)
	h.span(vocab.SpanAgentRun, time.Second, codes.Unset)
	h.span("some other span", time.Second, codes.Error, vocab.OutcomeKey.String("error"))
	if c := h.collect(); len(c) != 0 {
		t.Errorf("recorded %v for spans that are not in the span model's metric set", c.names())
	}
}

func TestToolDurationFallsBackToSpanTime(t *testing.T) {
	h := newHarness(t)
	h.span(vocab.SpanTool.Name("edit"), 250*time.Millisecond, codes.Unset,
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "edit"))
	wantEqual(t, "pi.tool.duration", h.collect().histograms(t, vocab.MetricToolDuration), map[string]histo{
		"error=false,gen_ai.tool.name=edit": {1, 0.25},
	})
}

func TestInstrumentUnits(t *testing.T) {
	h := newHarness(t)
	metricstest.Emit(context.Background(), h.tracer, metricstest.Run{
		Outcome: "ok", Provider: "p", Model: "m",
		Turns: []metricstest.Turn{{
			Chat:  metricstest.Chat{InputTokens: 1, OutputTokens: 1, Cost: 1, TimeToFirstChunk: time.Second, Duration: time.Second},
			Tools: []metricstest.Tool{{Name: "bash", Duration: time.Second}},
		}},
		Retries:     []string{"success"},
		Compactions: []metricstest.Compaction{{Reason: "threshold", Outcome: "ok"}},
		RPC:         []metricstest.RPC{{Command: "prompt", Success: true}},
		Dialogs:     []metricstest.Dialog{{Method: "confirm", Outcome: "confirmed", Wait: time.Second}},
	})
	want := map[string]string{
		vocab.MetricTokenUsage: "{token}", vocab.MetricOperationDuration: "s", vocab.MetricTimeToFirstChunk: "s",
		vocab.MetricRuns: "{run}", vocab.MetricRunDuration: "s", vocab.MetricTurns: "{turn}",
		vocab.MetricToolCalls: "{call}", vocab.MetricToolDuration: "s", vocab.MetricRetries: "{retry}",
		vocab.MetricCompactions: "{compaction}", vocab.MetricCost: "{USD}", vocab.MetricExtensionUIWait: "s",
		vocab.MetricRPCCommands: "{command}",
	}
	c := h.collect()
	for name, unit := range want {
		m, ok := c[name]
		if !ok {
			t.Errorf("%s not recorded", name)
			continue
		}
		if m.Unit != unit {
			t.Errorf("%s unit %q, want %q", name, m.Unit, unit)
		}
	}
	if len(c) != len(want) {
		t.Errorf("recorded %v, want exactly the %d instruments above", c.names(), len(want))
	}
}

// A nested agent run (an invoke_agent span below a tool) is a subagent, not a run of Pi: it
// counts in pi.subagent.runs under its agent name and outcome, never in pi.runs, and its model
// calls' cost and tokens count under its agent name, apart from the parent's.
func TestSubagentRuns(t *testing.T) {
	h := newHarness(t)
	invoke := attribute.String("gen_ai.operation.name", "invoke_agent")
	h.span("invoke_agent scout", 2*time.Second, codes.Unset, invoke,
		attribute.String("gen_ai.agent.name", "scout"), vocab.NestedDepthKey.Int(1))
	h.span("invoke_agent scout", time.Second, codes.Error, invoke,
		attribute.String("gen_ai.agent.name", "scout"), vocab.NestedDepthKey.Int(1))
	h.span("chat m", time.Second, codes.Unset, attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.agent.name", "scout"), attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "m"), vocab.CostTotalKey.Float64(0.5),
		attribute.Int("gen_ai.usage.input_tokens", 70))
	h.span("chat m", time.Second, codes.Unset, attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "m"), vocab.CostTotalKey.Float64(0.25),
		attribute.Int("gen_ai.usage.input_tokens", 30))
	h.span(vocab.SpanRoot, 3*time.Second, codes.Unset, invoke, vocab.OutcomeKey.String("ok"))

	got := h.collect()
	runs := got.sums(t, vocab.MetricRuns)
	if len(runs) != 1 || runs["pi.outcome=ok"] != 1 {
		t.Errorf("pi.runs = %v, want the root only", runs)
	}
	subs := got.sums(t, vocab.MetricSubagentRuns)
	if subs["gen_ai.agent.name=scout,pi.outcome=ok"] != 1 || subs["gen_ai.agent.name=scout,pi.outcome=error"] != 1 || len(subs) != 2 {
		t.Errorf("pi.subagent.runs = %v, want one ok and one error run of scout", subs)
	}
	cost := got.sums(t, vocab.MetricCost)
	if !near(cost["gen_ai.agent.name=scout,gen_ai.provider.name=openai,gen_ai.request.model=m"], 0.5) ||
		!near(cost["gen_ai.agent.name=pi,gen_ai.provider.name=openai,gen_ai.request.model=m"], 0.25) {
		t.Errorf("pi.cost = %v, want 0.5 for scout and 0.25 for pi", cost)
	}
	tokens := got.histograms(t, vocab.MetricTokenUsage)
	in := ",gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=m,gen_ai.token.type=input"
	wantEqual(t, "gen_ai.client.token.usage", tokens, map[string]histo{
		"gen_ai.agent.name=scout" + in: {1, 70},
		"gen_ai.agent.name=pi" + in:    {1, 30},
	})
}
