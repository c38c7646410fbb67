package agentmap

import (
	"cmp"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/errtext"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// runGenAI is what the root's GenAI attributes need of the run's calls.
type runGenAI struct {
	model     string // the one model every call asked for
	manyModel bool   // calls asked for more than one
	errorType string // error.type of the last call, when it failed
}

// called notes one finished model call.
func (g *runGenAI) called(msg *event.Message) {
	switch {
	case msg.Model == "" || g.manyModel:
	case g.model == "":
		g.model = msg.Model
	case g.model != msg.Model:
		g.manyModel = true
	}
	g.errorType = ""
	if msg.StopReason == "error" {
		g.errorType = errtext.Class(msg.ErrorMessage)
	}
}

// rootGenAIAttrs adds the root's gen_ai.request.model, only when one model
// served the whole run (an invoke_agent span names the model it was asked
// for; a run that switched models has no one answer), and error.type when
// the run failed: the last call's class, or why the run never settled.
func (r *run) rootGenAIAttrs(attrs []attribute.KeyValue, outcome vocab.Outcome, reason vocab.EndReason) []attribute.KeyValue {
	if r.genai.model != "" && !r.genai.manyModel {
		attrs = append(attrs, semconv.GenAIRequestModel(r.genai.model))
	}
	switch outcome {
	case vocab.OutcomeError:
		t := cmp.Or(r.genai.errorType, semconv.ErrorTypeOther.Value.AsString())
		attrs = append(attrs, semconv.ErrorTypeKey.String(t))
	case vocab.OutcomeUnsettled:
		attrs = append(attrs, semconv.ErrorTypeKey.String(string(reason)))
	}
	return attrs
}

// summaryCall records a compaction's summary as the model call it is: a
// chat span below the pi.compaction, from its start to its end, with the
// call's tokens and cost, so that token metrics and cost panels agree. The
// compaction span keeps the outcome; the usage is the call's.
func (m *Mapper) summaryCall(c *compaction, u *event.Usage, summary string, at time.Time) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		vocab.CompactionSummaryCallKey.Bool(true),
	}
	// Pi summarises with the session's current model: the run's, else the
	// last call's.
	provider, model := m.conv.provider, m.conv.model
	if r := c.run; r != nil && r.model != "" {
		provider, model = r.provider, r.model
	}
	if model != "" {
		if provider != "" {
			attrs = appendProviderAttrs(attrs, provider)
		}
		attrs = append(attrs, semconv.GenAIRequestModel(model))
		attrs = m.endpointAttrs(provider, model, attrs)
	}
	attrs = appendUsageAttrs(attrs, u)
	attrs = append(attrs, vocab.CostTotalKey.Float64(u.Cost.Total))
	if m.cfg.content != nil && summary != "" {
		out := m.summaryOutput(summary)
		if r := c.run; r != nil {
			attrs = budgeted(r, &r.content.out, maxRunOutputBytes, attrs, semconv.GenAIOutputMessagesKey, out)
		} else {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(out)) // a trace of its own
		}
	}
	var base string
	if !c.path.IsRoot() {
		base = c.path.String()
	}
	path, parent := spanid.Path{Base: base, Kind: "summary"}, c.ctx
	if c.run == nil && m.run == nil && m.ident.key != "" {
		// An idle compaction's trace is named by the input (compactionStart),
		// and so is its call: start names spans only within a run.
		parent = spanid.WithKey(parent, m.ident.key, path)
	}
	s := new(span)
	m.start(s, parent, path, vocab.SpanChat.Name(model), trace.SpanKindClient, c.start, attrs...)
	s.finish(at)
}
