//go:build realstack

package jaegertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestRoundTrip sends spans through both OTLP receivers with the real SDK
// exporters and reads them back through the query API.
func TestRoundTrip(t *testing.T) {
	j := Start(t)
	for _, tc := range []struct {
		proto string
		exp   func(ctx context.Context) (sdktrace.SpanExporter, error)
	}{
		{"grpc", func(ctx context.Context) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(j.OTLPGRPC), otlptracegrpc.WithInsecure())
		}},
		{"http", func(ctx context.Context) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLPHTTP+"/v1/traces"))
		}},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			ctx := context.Background()
			exp, err := tc.exp(ctx)
			if err != nil {
				t.Fatal(err)
			}
			service := "jaegertest-" + tc.proto
			tp := sdktrace.NewTracerProvider(
				sdktrace.WithBatcher(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
			)
			began := time.Now().Add(-time.Second)
			tr := tp.Tracer("jaegertest")
			ctx, root := tr.Start(ctx, "root", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				attribute.String("s", "text"), attribute.Int64("i", 42), attribute.Float64("f", 1.5),
				attribute.Bool("b", true), attribute.StringSlice("list", []string{"x", "y"}),
			))
			_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient))
			child.AddEvent("happened", trace.WithAttributes(attribute.Int("n", 7)))
			child.SetStatus(codes.Error, "it broke")
			child.End()
			root.End()
			traceID := root.SpanContext().TraceID().String()
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			got := j.WaitTrace(t, context.Background(), traceID, 2)
			if got.ID != traceID {
				t.Errorf("trace id %q, want %q", got.ID, traceID)
			}
			if len(got.Spans) != 2 {
				t.Fatalf("%d spans, want 2:\n%s", len(got.Spans), got.Tree())
			}
			roots := got.Roots()
			if len(roots) != 1 || roots[0].Name != "root" {
				t.Fatalf("roots %v, want [root]:\n%s", names(roots), got.Tree())
			}
			r := roots[0]
			if r.Kind != "server" {
				t.Errorf("root kind %q, want server", r.Kind)
			}
			if r.Str("s") != "text" {
				t.Errorf("s = %v", r.Attrs["s"])
			}
			if v, ok := r.Int("i"); !ok || v != 42 {
				t.Errorf("i = %#v", r.Attrs["i"])
			}
			if v, ok := r.Float("f"); !ok || v != 1.5 {
				t.Errorf("f = %#v", r.Attrs["f"])
			}
			if v, ok := r.Bool("b"); !ok || !v {
				t.Errorf("b = %#v", r.Attrs["b"])
			}
			if l, _ := r.Attrs["list"].([]any); !slices.Equal(l, []any{"x", "y"}) {
				t.Errorf("list = %#v", r.Attrs["list"])
			}
			if got.Service() != service {
				t.Errorf("service %q, want %q", got.Service(), service)
			}
			kids := r.Child("child")
			if len(kids) != 1 {
				t.Fatalf("root children %v, want [child]", names(r.Children))
			}
			c := kids[0]
			if c.Parent != r || c.ParentID != r.SpanID {
				t.Errorf("child parent %q, want %q", c.ParentID, r.SpanID)
			}
			if c.Kind != "client" {
				t.Errorf("child kind %q, want client", c.Kind)
			}
			if c.Status.Code != "error" || c.Status.Message != "it broke" {
				t.Errorf("child status %+v", c.Status)
			}
			if len(c.Events) != 1 || c.Events[0].Name != "happened" || c.Events[0].Attrs["n"] != int64(7) {
				t.Errorf("child events %+v", c.Events)
			}
			if !strings.Contains(got.Tree(), "  child [error: it broke]") {
				t.Errorf("tree:\n%s", got.Tree())
			}

			found := j.WaitService(t, context.Background(), service, began, 2)
			if len(found) != 1 || found[0].ID != traceID {
				t.Errorf("FindTraces(%s) = %d traces, want just %s", service, len(found), traceID)
			}
			svcs, err := j.Services(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(svcs, service) {
				t.Errorf("services %v lack %s", svcs, service)
			}
		})
	}
	if _, err := j.Trace(context.Background(), "0123456789abcdef0123456789abcdef"); err != ErrNotFound {
		t.Errorf("unknown trace: err %v, want ErrNotFound", err)
	}
}

func names(spans []*Span) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
