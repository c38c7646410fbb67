package metrics_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestSpendLabels: cost and tokens carry the team, repository and skill a chat
// span names, as names; a value that is no name becomes _OTHER, and a
// span without them gets no such label.
func TestSpendLabels(t *testing.T) {
	for _, latest := range []bool{false, true} {
		var opts []metrics.Option
		if latest {
			opts = append(opts, metrics.WithGenAILatest())
		}
		h := newHarness(t, opts...)
		chat := func(extra ...attribute.KeyValue) {
			h.span("chat m", time.Second, codes.Unset, append([]attribute.KeyValue{
				vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIProviderNameKey.String("openai"),
				vocab.GenAIRequestModelKey.String("m"), vocab.GenAIUsageInputTokensKey.Int(10),
				vocab.GenAIUsageOutputTokensKey.Int(5), vocab.CostTotalKey.Float64(0.5),
			}, extra...)...)
		}
		chat(vocab.TeamKey.String("red"), attribute.String("vcs.repository.name", "widget"), vocab.SkillKey.String("pdf-tools"))
		chat(vocab.TeamKey.String("red"), attribute.String("vcs.repository.name", "a path/with spaces"))
		chat()
		c := h.collect()
		base := "gen_ai.agent.name=pi,gen_ai.provider.name=openai,gen_ai.request.model=m"
		wantEqual(t, "pi.cost", c.sums(t, vocab.MetricCost), map[string]float64{
			base + ",pi.skill=pdf-tools,pi.team=red,vcs.repository.name=widget": 0.5,
			base + ",pi.team=red,vcs.repository.name=_OTHER":                    0.5,
			base: 0.5,
		})
		if latest {
			continue
		}
		tokens := c.histograms(t, vocab.MetricTokenUsage)
		if _, ok := tokens["gen_ai.agent.name=pi,gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=m,gen_ai.token.type=input,pi.skill=pdf-tools,pi.team=red,vcs.repository.name=widget"]; !ok {
			t.Errorf("token usage lacks the team and repository: %v", tokens)
		}
	}
}

// TestExemplarsPointAtTheSpan: a cost and a token count keep, as an
// exemplar, the trace and span of the model call behind them.
func TestExemplarsPointAtTheSpan(t *testing.T) {
	h := newHarness(t)
	_, s := h.tracer.Start(context.Background(), "chat m", trace.WithAttributes(
		vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIProviderNameKey.String("openai"),
		vocab.GenAIRequestModelKey.String("m"), vocab.GenAIUsageInputTokensKey.Int(10), vocab.CostTotalKey.Float64(0.5)))
	sc := s.SpanContext()
	s.End()
	c := h.collect()
	var ids [][2][]byte
	switch d := c[vocab.MetricCost].Data.(type) {
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			for _, e := range p.Exemplars {
				ids = append(ids, [2][]byte{e.TraceID, e.SpanID})
			}
		}
	default:
		t.Fatalf("pi.cost is %T", d)
	}
	switch d := c[vocab.MetricTokenUsage].Data.(type) {
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			for _, e := range p.Exemplars {
				ids = append(ids, [2][]byte{e.TraceID, e.SpanID})
			}
		}
	default:
		t.Fatalf("token usage is %T", d)
	}
	if len(ids) != 2 {
		t.Fatalf("%d exemplars, want one on the cost and one on the tokens", len(ids))
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	for _, id := range ids {
		if string(id[0]) != string(tid[:]) || string(id[1]) != string(sid[:]) {
			t.Errorf("exemplar %x/%x, want %s/%s", id[0], id[1], tid, sid)
		}
	}
}
