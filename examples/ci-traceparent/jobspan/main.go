// Command jobspan runs a command inside a span, the way a CI job wraps its
// steps, and exports that span over OTLP. The command gets the span in
// TRACEPARENT, so each pi-otel run inside it becomes the span's child:
// the job and its agents are one trace.
//
//	jobspan "ci: review" -- ./job.sh
//
// The exporter is configured by the usual OTEL_EXPORTER_OTLP_* variables
// (OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC, otherwise OTLP/HTTP) and
// OTEL_SERVICE_NAME. A TRACEPARENT in jobspan's own environment (a
// pipeline's) becomes the job span's parent.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if len(os.Args) < 4 || os.Args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: jobspan NAME -- COMMAND [ARG...]")
		os.Exit(2)
	}
	code, err := run(context.Background(), os.Args[1], os.Args[3:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobspan:", err)
	}
	os.Exit(code)
}

// envCarrier reads and writes TRACEPARENT-style variables.
type envCarrier map[string]string

func (c envCarrier) Get(k string) string { return c[strings.ToUpper(k)] }
func (c envCarrier) Set(k, v string)     { c[strings.ToUpper(k)] = v }
func (c envCarrier) Keys() []string      { return []string{"traceparent", "tracestate"} }

func run(ctx context.Context, name string, argv []string) (int, error) {
	var exp sdktrace.SpanExporter
	var err error
	if os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL") == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return 1, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer tp.Shutdown(ctx)

	tc := propagation.TraceContext{}
	parent := tc.Extract(ctx, envCarrier{"TRACEPARENT": os.Getenv("TRACEPARENT"), "TRACESTATE": os.Getenv("TRACESTATE")})
	ctx, span := tp.Tracer("examples/ci-traceparent/jobspan").Start(parent, name)

	child := envCarrier{}
	tc.Inject(ctx, child)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	for k, v := range child {
		cmd.Env = append(cmd.Env, k+"="+v) // later entries win
	}
	code := 0
	if err := cmd.Run(); err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		span.SetStatus(codes.Error, fmt.Sprintf("exit %d", code))
	}
	span.End()
	return code, tp.Shutdown(ctx)
}
