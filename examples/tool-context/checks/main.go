// Command checks stands for a project's instrumented test suite: it runs
// a few named checks, one span each, below a span for the whole suite,
// and exports them over OTLP. Started by Pi's bash tool under pi-otel, it
// finds the tool call's span in TRACEPARENT, so the suite sits below the
// call in the agent's trace.
//
//	checks parse render
//
// The exporter reads the usual OTEL_EXPORTER_OTLP_* variables
// (OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC, else OTLP/HTTP) and
// OTEL_SERVICE_NAME.
package main

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "checks:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names []string) error {
	exporter := otlptracehttp.New
	if os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL") == "grpc" {
		exporter = func(ctx context.Context, _ ...otlptracehttp.Option) (*otlptrace.Exporter, error) {
			return otlptracegrpc.New(ctx)
		}
	}
	exp, err := exporter(ctx)
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	// The caller's context, as W3C-aware tools read it from the
	// environment: a MapCarrier keyed by the lower-case header names.
	parent := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{
		"traceparent": os.Getenv("TRACEPARENT"),
		"tracestate":  os.Getenv("TRACESTATE"),
	})
	tracer := tp.Tracer("examples/tool-context/checks")
	suiteCtx, suite := tracer.Start(parent, "checks")
	for _, name := range names {
		_, span := tracer.Start(suiteCtx, "check "+name)
		fmt.Println("ok", name)
		span.End()
	}
	suite.End()
	return tp.Shutdown(ctx)
}
