// Package metrics derives pi-otel's metrics from the spans the mapper finishes.
//
// The mapper builds spans, not metrics. [SpanMetrics] is an sdktrace.SpanProcessor that reads
// each finished span's name and attributes (docs/span-model.md) and records instruments on the
// MeterProvider it was given. Labels come only from bounded attributes (outcomes, reasons,
// provider, model, tool and command names), never from ids or free text. The one value no span
// carries, the time between a live call's output chunks, the mapper hands to
// [SpanMetrics.OutputChunk] as it measures it.
package metrics

import (
	"cmp"
	"context"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of every instrument this package
// creates: public and stable, not the package's path (docs/span-model.md).
const ScopeName = "github.com/pi-otel/pi-otel/metrics"

// Attribute keys of the GenAI conventions that this package reads, by
// short names; every name comes from package vocab.
const (
	keyOperation     = vocab.GenAIOperationNameKey
	keyProvider      = vocab.GenAIProviderNameKey
	keyRequestModel  = vocab.GenAIRequestModelKey
	keyInputTokens   = vocab.GenAIUsageInputTokensKey
	keyOutputTokens  = vocab.GenAIUsageOutputTokensKey
	keyTTFC          = vocab.GenAIResponseTimeToFirstChunkKey
	keyToolName      = vocab.GenAIToolNameKey
	keyAgentName     = vocab.GenAIAgentNameKey
	keyErrorType     = vocab.ErrorTypeKey
	keyErrorLabel    = attribute.Key("error")
	unknownLabel     = "_OTHER"
	maxLabelLength   = 64
	unknownProvider  = "_OTHER"
	missingModelName = "unknown"
)

// Closed value sets from the span model; anything else is recorded as "_OTHER".
var (
	runOutcomes        = setOf(vocab.Values(vocab.OutcomeKey))
	retryOutcomes      = setOf(vocab.Values(vocab.RetryOutcomeKey))
	compactionOutcomes = setOf(vocab.Values(vocab.CompactionOutcomeKey))
	uiOutcomes         = setOf(vocab.Values(vocab.UIOutcomeKey))
)

// Bucket boundaries. The GenAI ones are the semantic conventions' advice; the others cover an
// agent's time scales, from a quick tool call to a human answering a dialog after an hour.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	genAIBuckets    = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	runBuckets      = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
	toolBuckets     = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	humanWaitBucket = []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
)

// Buckets of the latest GenAI conventions' agent metrics.
var (
	agentBuckets = []float64{0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6}
	callBuckets  = []float64{1, 2, 4, 8, 16, 32, 64, 128}
)

// Option configures SpanMetrics.
type Option = option.Option[config]

type config struct{ latest bool }

// WithGenAILatest records the latest GenAI conventions' metrics
// (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) in place of
// the v1.41 ones: gen_ai.client.inference.* for model calls, and
// gen_ai.invoke_agent.* and gen_ai.execute_tool.duration beside the pi.*
// run and tool metrics, which both modes record.
func WithGenAILatest() Option { return option.Func[config](func(c *config) { c.latest = true }) }

// schemaURL is the schema the package's meter declares: the latest's in
// that mode, whose names it records.
func (c config) schemaURL() string {
	if c.latest {
		return vocab.LatestSchemaURL
	}
	return vocab.SchemaURL
}

// SpanMetrics records metrics for every span that ends. It implements sdktrace.SpanProcessor;
// register it on the TracerProvider next to the exporting processor.
type SpanMetrics struct {
	// v1.41 (the default); nil in the latest mode.
	tokenUsage *genaiconv.ClientTokenUsage
	opDuration *genaiconv.ClientOperationDuration
	firstChunk *genaiconv.ClientOperationTimeToFirstChunk
	perChunk   *genaiconv.ClientOperationTimePerOutputChunk
	// The latest conventions; nil by default.
	latest *latestInstruments

	runs         metric.Int64Counter
	runDuration  metric.Float64Histogram
	turns        metric.Int64Counter
	toolCalls    metric.Int64Counter
	toolDuration metric.Float64Histogram
	retries      metric.Int64Counter
	compactions  metric.Int64Counter
	cost         metric.Float64Counter
	uiWait       metric.Float64Histogram
	rpcCommands  metric.Int64Counter
	subagents    metric.Int64Counter
	subagentDur  metric.Float64Histogram
	// lastChunk is the label set of the last chunk gap recorded (chunkLabels).
	lastChunk atomic.Pointer[chunkSet]
}

var _ sdktrace.SpanProcessor = (*SpanMetrics)(nil)

// NewSpanMetrics creates the instruments on mp's meter for this package's scope.
func NewSpanMetrics(mp metric.MeterProvider, opts ...Option) (*SpanMetrics, error) {
	cfg := option.Apply(config{}, opts)
	in := &instruments{m: mp.Meter(ScopeName, metric.WithSchemaURL(cfg.schemaURL()))}
	var s SpanMetrics
	if cfg.latest {
		s.latest = newLatestInstruments(in)
	} else {
		tu, err := genaiconv.NewClientTokenUsage(in.m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
		in.keep(err)
		od, err := genaiconv.NewClientOperationDuration(in.m, metric.WithExplicitBucketBoundaries(genAIBuckets...))
		in.keep(err)
		fc, err := genaiconv.NewClientOperationTimeToFirstChunk(in.m, metric.WithExplicitBucketBoundaries(genAIBuckets...))
		in.keep(err)
		pc, err := genaiconv.NewClientOperationTimePerOutputChunk(in.m, metric.WithExplicitBucketBoundaries(genAIBuckets...))
		in.keep(err)
		s.tokenUsage, s.opDuration, s.firstChunk, s.perChunk = &tu, &od, &fc, &pc
	}
	s.runs = in.int64Counter(vocab.MetricRuns, "{run}", "Settled (or abandoned) agent invocations, by outcome.")
	s.runDuration = in.float64Histogram(vocab.MetricRunDuration, "s", "Duration of an agent invocation, first agent_start to settle.", runBuckets)
	s.turns = in.int64Counter(vocab.MetricTurns, "{turn}", "Agent turns (one assistant message and its tool calls).")
	s.toolCalls = in.int64Counter(vocab.MetricToolCalls, "{call}", "Tool executions, by tool and whether they failed.")
	s.toolDuration = in.float64Histogram(vocab.MetricToolDuration, "s", "Tool execution duration.", toolBuckets)
	s.retries = in.int64Counter(vocab.MetricRetries, "{retry}", "Automatic retry attempts after a failed model call, by outcome.")
	s.compactions = in.int64Counter(vocab.MetricCompactions, "{compaction}", "Context compactions, by reason and outcome.")
	s.cost = in.float64Counter(vocab.MetricCost, "{USD}", "Model cost in US dollars as Pi computes it, by provider and model.")
	s.uiWait = in.float64Histogram(vocab.MetricExtensionUIWait, "s",
		"Time an extension dialog waited for the RPC controller (usually a human).", humanWaitBucket)
	s.rpcCommands = in.int64Counter(vocab.MetricRPCCommands, "{command}", "RPC commands from the controller, by command and success.")
	s.subagents = in.int64Counter(vocab.MetricSubagentRuns, "{run}", "Nested agent runs a tool ran (subagents), by agent and outcome.")
	s.subagentDur = in.float64Histogram(vocab.MetricSubagentDuration, "s", "Duration of a nested agent run, by agent and outcome.", runBuckets)
	if err := in.err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// OnStart does nothing: every value is known only when a span ends.
func (*SpanMetrics) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// Shutdown does nothing; the MeterProvider owns the instruments' lifecycle.
func (*SpanMetrics) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing; flush the MeterProvider instead.
func (*SpanMetrics) ForceFlush(context.Context) error { return nil }

// OnEnd records the metrics a finished span contributes.
func (s *SpanMetrics) OnEnd(span sdktrace.ReadOnlySpan) {
	// The span's context makes the SDK keep an exemplar pointing at the
	// span (its trace-based filter), so a spike on a cost or token panel
	// leads to the trace behind it.
	ctx := trace.ContextWithSpanContext(context.Background(), span.SpanContext())
	a := attrs(span.Attributes())
	if a.has(vocab.RetracedKey) {
		return // counted when it was first traced
	}
	name := span.Name()
	switch {
	case a.has(vocab.NestedDepthKey) && a.str(keyOperation) == semconv.GenAIOperationNameInvokeAgent.Value.AsString():
		s.onSubagent(ctx, span, a)
	case name == vocab.SpanRoot || a.str(keyOperation) == semconv.GenAIOperationNameInvokeAgent.Value.AsString():
		s.onRoot(ctx, span, a)
	case a.str(keyOperation) == semconv.GenAIOperationNameChat.Value.AsString():
		s.onChat(ctx, span, a)
	case a.str(keyOperation) == semconv.GenAIOperationNameExecuteTool.Value.AsString():
		s.onTool(ctx, span, a)
	case name == vocab.SpanTurn:
		s.turns.Add(ctx, 1)
	case name == vocab.SpanRetry:
		s.retries.Add(ctx, 1, metric.WithAttributes(
			vocab.RetryOutcomeKey.String(oneOf(a.str(vocab.RetryOutcomeKey), retryOutcomes))))
	case name == vocab.SpanCompaction:
		s.onCompaction(ctx, span, a)
	case strings.HasPrefix(name, vocab.SpanExtensionUI.Prefix()):
		s.uiWait.Record(ctx, seconds(span), metric.WithAttributes(
			vocab.UIMethodKey.String(token(a.str(vocab.UIMethodKey))),
			vocab.UIOutcomeKey.String(oneOf(a.str(vocab.UIOutcomeKey), uiOutcomes))))
	case strings.HasPrefix(name, vocab.SpanRPC.Prefix()):
		s.onRPC(ctx, span, a)
	}
}

func (s *SpanMetrics) onRoot(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	outcome := outcomeOf(span, a, vocab.OutcomeKey, string(vocab.OutcomeOK), string(vocab.OutcomeError))
	set := metric.WithAttributes(vocab.OutcomeKey.String(oneOf(outcome, runOutcomes)))
	s.runs.Add(ctx, 1, set)
	s.runDuration.Record(ctx, seconds(span), set)
	// Model calls outside any turn, charged all the same: without them pi.cost falls short of
	// the root's total.
	for _, ev := range span.Events() {
		if ev.Name == vocab.EventUsage || ev.Name == vocab.EventBranchSummary {
			s.addCost(ctx, attrs(ev.Attributes))
		}
	}
	if s.latest != nil {
		// How the run ended classes a failure with no error.type.
		s.latest.onAgent(ctx, span, a, agentName, oneOf(outcome, runOutcomes))
	}
}

// onSubagent records a nested agent run: not a run of pi.runs, whose
// count is of invocations of Pi itself. Its model calls count in the cost
// and token metrics as chats, under their gen_ai.agent.name.
func (s *SpanMetrics) onSubagent(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	outcome := string(vocab.OutcomeOK)
	if span.Status().Code == codes.Error {
		outcome = string(vocab.OutcomeError)
	}
	agent := agentOf(a)
	set := metric.WithAttributes(agent, vocab.OutcomeKey.String(outcome))
	s.subagents.Add(ctx, 1, set)
	s.subagentDur.Record(ctx, seconds(span), set)
	if s.latest != nil {
		s.latest.onAgent(ctx, span, a, agent, vocab.NestedErrorType)
	}
}

// agentOf is the gen_ai.agent.name label of a span: a nested run's agent,
// else Pi itself.
func agentOf(a attrs) attribute.KeyValue {
	return keyAgentName.String(cmp.Or(token(a.str(keyAgentName)), vocab.AgentName))
}

func (s *SpanMetrics) onChat(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	provider := genaiconv.ProviderNameAttr(cmp.Or(token(a.str(keyProvider)), unknownProvider))
	model := cmp.Or(token(a.str(keyRequestModel)), missingModelName)
	modelAttr := keyRequestModel.String(model)
	s.addCost(ctx, a)
	if s.latest != nil {
		s.latest.onChat(ctx, span, a, provider, modelAttr)
		return
	}

	// Tokens, as cost, by agent: a dashboard splits the parent from its
	// subagents.
	labels := append(spend(a), modelAttr)
	if v, ok := a.int(keyInputTokens); ok {
		s.tokenUsage.Record(ctx, v, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeInput, labels...)
	}
	if v, ok := a.int(keyOutputTokens); ok {
		s.tokenUsage.Record(ctx, v, genaiconv.OperationNameChat, provider, genaiconv.TokenTypeOutput, labels...)
	}

	d := chatDuration(span, a)
	extra := []attribute.KeyValue{modelAttr}
	if span.Status().Code == codes.Error {
		extra = append(extra, keyErrorType.String(cmp.Or(token(a.str(keyErrorType)), unknownLabel)))
	}
	s.opDuration.Record(ctx, d, genaiconv.OperationNameChat, provider, extra...)

	if v, ok := a.float(keyTTFC); ok && v >= 0 {
		s.firstChunk.Record(ctx, v, genaiconv.OperationNameChat, provider, modelAttr)
	}
}

// OutputChunk records the time from one output chunk of a live model call to the next, which
// the mapper measures from the records' arrival times (agentmap.WithChunkObserver): no span
// holds a value per chunk. ctx holds the call's span, so that an exemplar leads to it. The
// labels are the time-to-first-chunk's: the conventions ask for no error.type on either.
func (s *SpanMetrics) OutputChunk(ctx context.Context, gap time.Duration, provider, model string) {
	if gap < 0 {
		return
	}
	var h metric.Float64Histogram
	if s.latest != nil {
		h = s.latest.perChunk
	} else {
		h = s.perChunk.Inst()
	}
	h.Record(ctx, gap.Seconds(), s.chunkLabels(provider, model))
}

// chunkLabels is the label set of a call's chunk gaps. A call has dozens to thousands of chunks
// and a process mostly one model at a time, so the last set is kept rather than built (and
// allocated) again for every chunk.
func (s *SpanMetrics) chunkLabels(provider, model string) metric.MeasurementOption {
	if c := s.lastChunk.Load(); c != nil && c.provider == provider && c.model == model {
		return c.opt
	}
	c := &chunkSet{provider: provider, model: model, opt: metric.WithAttributeSet(attribute.NewSet(
		keyOperation.String(string(genaiconv.OperationNameChat)),
		keyProvider.String(cmp.Or(token(provider), unknownProvider)),
		keyRequestModel.String(cmp.Or(token(model), missingModelName))))}
	s.lastChunk.Store(c)
	return c.opt
}

// chunkSet is one call's chunk labels, by the provider and model the mapper named.
type chunkSet struct {
	provider, model string
	opt             metric.MeasurementOption
}

// chatDuration is a model call's duration: Pi's own measurement when it has one (in replay the
// span times are reconstructed from it anyway), else the span's.
func chatDuration(span sdktrace.ReadOnlySpan, a attrs) float64 {
	if ms, ok := a.float(vocab.DurationMsKey); ok && ms > 0 {
		return ms / 1000
	}
	return seconds(span)
}

func (s *SpanMetrics) onTool(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	failed := span.Status().Code == codes.Error || a.str(keyErrorType) != ""
	set := metric.WithAttributes(
		keyToolName.String(cmp.Or(token(a.str(keyToolName)), unknownLabel)),
		keyErrorLabel.Bool(failed))
	s.toolCalls.Add(ctx, 1, set)
	d := seconds(span)
	if ms, ok := a.float(vocab.ToolDurationMsKey); ok && ms > 0 {
		d = ms / 1000
	}
	s.toolDuration.Record(ctx, d, set)
	if s.latest != nil {
		s.latest.onTool(ctx, a, d, failed)
	}
}

func (s *SpanMetrics) onCompaction(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	outcome := outcomeOf(span, a, vocab.CompactionOutcomeKey, string(vocab.CompactionOK), string(vocab.CompactionError))
	s.compactions.Add(ctx, 1, metric.WithAttributes(
		vocab.CompactionReasonKey.String(cmp.Or(token(a.str(vocab.CompactionReasonKey)), unknownLabel)),
		vocab.CompactionOutcomeKey.String(oneOf(outcome, compactionOutcomes))))
	// The summary is a model call Pi charges for: without it pi.cost falls short of what Pi
	// reports. The span names a model only when the mapper knows it.
	s.addCost(ctx, a)
}

// addCost counts the cost a carries under the provider and model it names, or the unknown
// labels: a compaction's summary call, and the usage and branch-summary entries of a session
// file, which the mapper records as events of the root.
func (s *SpanMetrics) addCost(ctx context.Context, a attrs) {
	if v, ok := a.float(vocab.CostTotalKey); ok && v > 0 {
		s.cost.Add(ctx, v, metric.WithAttributes(append(spend(a),
			keyProvider.String(cmp.Or(token(a.str(keyProvider)), unknownProvider)),
			keyRequestModel.String(cmp.Or(token(a.str(keyRequestModel)), missingModelName)))...))
	}
}

func (s *SpanMetrics) onRPC(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs) {
	cmd := cmp.Or(a.str(vocab.RPCCommandKey), strings.TrimPrefix(span.Name(), vocab.SpanRPC.Prefix()))
	ok, found := a.bool(vocab.RPCSuccessKey)
	if !found {
		ok = span.Status().Code != codes.Error
	}
	s.rpcCommands.Add(ctx, 1, metric.WithAttributes(
		vocab.RPCCommandKey.String(cmp.Or(token(cmd), unknownLabel)),
		vocab.RPCSuccessKey.Bool(ok)))
}

// attrs are a span's attributes, looked up by key. A span has a few dozen
// at most, so a scan beats building a map for every span a backfill ends;
// the last of a key wins, as it would in a map.
type attrs []attribute.KeyValue

func (a attrs) get(k attribute.Key) (attribute.Value, bool) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i].Key == k {
			return a[i].Value, true
		}
	}
	return attribute.Value{}, false
}

func (a attrs) has(k attribute.Key) bool { _, ok := a.get(k); return ok }

func (a attrs) str(k attribute.Key) string {
	if v, ok := a.get(k); ok && v.Type() == attribute.STRING {
		return v.AsString()
	}
	return ""
}

func (a attrs) int(k attribute.Key) (int64, bool) { return number[int64](a, k) }

func (a attrs) float(k attribute.Key) (float64, bool) { return number[float64](a, k) }

// number reads a numeric attribute, whether Pi's JSON made it an int or a
// float, as an N (a float is truncated to an int).
func number[N int64 | float64](a attrs, k attribute.Key) (N, bool) {
	v, ok := a.get(k)
	if !ok {
		return 0, false
	}
	switch v.Type() {
	case attribute.INT64:
		return N(v.AsInt64()), true
	case attribute.FLOAT64:
		return N(v.AsFloat64()), true
	}
	return 0, false
}

func (a attrs) bool(k attribute.Key) (bool, bool) {
	if v, ok := a.get(k); ok && v.Type() == attribute.BOOL {
		return v.AsBool(), true
	}
	return false, false
}

// outcomeOf is the span's outcome attribute key, or, for a span of an older
// mapper or a hand-made one without it, ok or failed by the span's status.
func outcomeOf(span sdktrace.ReadOnlySpan, a attrs, key attribute.Key, ok, failed string) string {
	if o := a.str(key); o != "" {
		return o
	}
	if span.Status().Code == codes.Error {
		return failed
	}
	return ok
}

func seconds(span sdktrace.ReadOnlySpan) float64 {
	d := max(span.EndTime().Sub(span.StartTime()), 0)
	return float64(d) / float64(time.Second)
}

func setOf(vs []string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func oneOf(v string, allowed map[string]bool) string {
	if allowed[v] {
		return v
	}
	return unknownLabel
}

// token keeps a label value only if it looks like a name (model, tool, command, reason): short,
// one line, no spaces. Anything else (an error message, a path) would blow up cardinality or leak
// content, so it becomes "_OTHER".
func token(v string) string {
	if v == "" {
		return ""
	}
	if len(v) > maxLabelLength {
		return unknownLabel
	}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("._-:/@+", r):
		default:
			return unknownLabel
		}
	}
	return v
}
