package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// testCtx bounds a test that waits on something; a hang fails the test
// rather than measuring time.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eachProtocol runs test as a subtest for each OTLP protocol, with a
// context bounded like testCtx's.
func eachProtocol(t *testing.T, test func(t *testing.T, ctx context.Context, protocol string)) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) { test(t, testCtx(t), protocol) })
	}
}

// loadConfig reads settings from env as the command line does and keeps
// the pipeline's, as internal/app passes them.
func loadConfig(t *testing.T, env map[string]string) telemetry.Config {
	t.Helper()
	c, err := config.Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c.Config
}

func setup(t *testing.T, cfg telemetry.Config, opts ...telemetry.Option) (*telemetry.Pipeline, *syncBuffer) {
	t.Helper()
	stderr := newSyncBuffer()
	tel, err := telemetry.Setup(context.Background(), cfg, append([]telemetry.Option{telemetry.WithStderr(stderr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, stderr
}

// makeTrace creates a small agent trace: a root, a model call, a failing
// tool call.
func makeTrace(tp trace.TracerProvider) trace.TraceID {
	tr := tp.Tracer("pi-otel/test")
	ctx, root := tr.Start(context.Background(), "invoke_agent pi")
	cctx, chat := tr.Start(ctx, "chat m", trace.WithAttributes(
		attribute.String("gen_ai.request.model", "m"), attribute.Int("gen_ai.usage.input_tokens", 12)))
	_, tool := tr.Start(cctx, "execute_tool bash", trace.WithAttributes(attribute.String("gen_ai.tool.name", "bash")))
	tool.SetStatus(codes.Error, "exit code 1")
	tool.End()
	chat.End()
	root.SetStatus(codes.Ok, "")
	root.End()
	return root.SpanContext().TraceID()
}

func recordMetric(mp metric.MeterProvider) {
	c, _ := mp.Meter("pi-otel/test").Int64Counter("pi.test.count", metric.WithUnit("{run}"))
	c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("k", "v")))
}

func TestConsoleExporter(t *testing.T) {
	tel, stderr := setup(t, loadConfig(t, map[string]string{"OTEL_METRICS_EXPORTER": "console"}))
	tid := makeTrace(tel.TracerProvider())
	recordMetric(tel.MeterProvider())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := stderr.String()
	for _, want := range []string{
		"trace " + tid.String() + "\n",
		"invoke_agent pi  ",
		"└─ chat m  ",
		"   └─ execute_tool bash  ",
		"ERROR: exit code 1  tool=bash",
		"pi-otel metrics:\n  pi.test.count{k=v} 3 {run}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour on a non-terminal: %q", out)
	}
	s := tel.Stats()
	if s != (telemetry.Stats{Traces: 1, Ended: 3, Exported: 3}) {
		t.Errorf("stats = %+v", s)
	}
	want := fmt.Sprintf("pi-otel: 1 trace (%s), 3 spans → console (stderr)", tid)
	if got := tel.Summary(); got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

func TestFileExporter(t *testing.T) {
	dir := t.TempDir()
	tracesPath, metricsPath := dir+"/traces.jsonl", dir+"/metrics.jsonl"
	// An earlier run's line stays: files are appended to.
	if err := os.WriteFile(tracesPath, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": tracesPath, "PI_OTEL_METRICS_FILE": metricsPath,
		"OTEL_SERVICE_NAME": "svc", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"})
	tel, stderr := setup(t, cfg)
	tid := makeTrace(tel.TracerProvider())
	recordMetric(tel.MeterProvider())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(tracesPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "{}" {
		t.Fatalf("traces file = %q", raw)
	}
	req, err := otlpjson.UnmarshalTraces([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	rs := req.ResourceSpans[0]
	attrs := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["service.name"] != "svc" || attrs["deployment.environment"] != "test" || attrs["telemetry.sdk.language"] != "go" ||
		attrs["telemetry.sdk.name"] != "opentelemetry" || attrs["telemetry.sdk.version"] == "" {
		t.Errorf("resource = %v", attrs)
	}
	// The resource declares the schema of the names the spans carry.
	if rs.SchemaUrl != vocab.SchemaURL {
		t.Errorf("resource schema %q, want %q", rs.SchemaUrl, vocab.SchemaURL)
	}
	spans := rs.ScopeSpans[0].Spans
	if len(spans) != 3 || trace.TraceID(spans[0].TraceId) != tid {
		t.Errorf("spans = %v", spans)
	}
	if !strings.Contains(lines[1], `"traceId":"`+tid.String()+`"`) {
		t.Errorf("trace id is not hex in %s", lines[1])
	}

	mraw, err := os.ReadFile(metricsPath)
	if err != nil {
		t.Fatal(err)
	}
	mreq, err := otlpjson.UnmarshalMetrics(mraw)
	if err != nil {
		t.Fatalf("metrics file %q: %v", mraw, err)
	}
	m := mreq.ResourceMetrics[0].ScopeMetrics[0].Metrics[0]
	if m.Name != "pi.test.count" || m.GetSum().DataPoints[0].GetAsInt() != 3 ||
		m.GetSum().AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("metric = %v", m)
	}
	if got := tel.Summary(); got != fmt.Sprintf("pi-otel: 1 trace (%s), 3 spans → file %s", tid, tracesPath) {
		t.Errorf("summary = %q", got)
	}
	if stderr.String() != "" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// A traces file whose last line a killed pi-otel left cut short: the next
// pi-otel ends that line before its own, says so once, and every other
// line decodes.
func TestFileExporterAfterTornLine(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/traces.jsonl"
	first, _ := setup(t, loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": path}))
	makeTrace(first.TracerProvider())
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := whole[:strings.IndexByte(string(whole), '\n')/2] // half the first line
	if err := os.WriteFile(path, append(whole, torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	next, stderr := setup(t, loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": path}))
	tid := makeTrace(next.TracerProvider())
	makeTrace(next.TracerProvider())
	if err := next.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) < 3 || lines[1] != string(torn) {
		t.Fatalf("the torn line is not alone on line 2 of %d:\n%s", len(lines), raw)
	}
	for i, l := range lines {
		if _, err := otlpjson.UnmarshalTraces([]byte(l)); (err == nil) != (i != 1) {
			t.Errorf("line %d: decodes %v (%v)", i+1, err == nil, err)
		}
	}
	if !strings.Contains(string(raw), tid.String()) {
		t.Error("the new trace is not in the file")
	}
	want := "pi-otel: " + path + " ended in a line cut short"
	if out := stderr.String(); strings.Count(out, want) != 1 || strings.Count(out, "\n") != 1 {
		t.Errorf("stderr = %q, want once %q", out, want)
	}
}

func TestFileToStderr(t *testing.T) {
	tel, stderr := setup(t, loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": "-"}))
	tid := makeTrace(tel.TracerProvider())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	req, err := otlpjson.UnmarshalTraces([]byte(stderr.String()))
	if err != nil {
		t.Fatalf("stderr %q: %v", stderr.String(), err)
	}
	if trace.TraceID(req.ResourceSpans[0].ScopeSpans[0].Spans[0].TraceId) != tid {
		t.Errorf("wrong trace on stderr")
	}
	if !strings.HasSuffix(tel.Summary(), "→ file (stderr)") {
		t.Errorf("summary = %q", tel.Summary())
	}
}

func TestNoneExporter(t *testing.T) {
	tel, stderr := setup(t, loadConfig(t, map[string]string{"OTEL_TRACES_EXPORTER": "none"}))
	tid := makeTrace(tel.TracerProvider())
	makeTrace(tel.TracerProvider())
	recordMetric(tel.MeterProvider())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "" {
		t.Errorf("none wrote %q", stderr.String())
	}
	// Spans are still created and counted.
	if s := tel.Stats(); s != (telemetry.Stats{Traces: 2, Ended: 6}) {
		t.Errorf("stats = %+v", s)
	}
	if got := tel.Summary(); got != "pi-otel: 2 traces, 6 spans → none (not exported)" {
		t.Errorf("summary = %q", got)
	}
	_ = tid
}

func TestForceFlushAndHandMadeConfig(t *testing.T) {
	// A Config built by hand, zero batch settings and all, still works.
	path := t.TempDir() + "/t.jsonl"
	tel, _ := setup(t, telemetry.Config{Traces: telemetry.Signal{Exporter: telemetry.ExporterFile, File: path}})
	makeTrace(tel.TracerProvider())
	if err := tel.ForceFlush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil || strings.Count(string(raw), "\n") != 1 {
		t.Fatalf("after ForceFlush the file holds %q (%v)", raw, err)
	}
	if s := tel.Stats(); s != (telemetry.Stats{Traces: 1, Ended: 3, Exported: 3}) {
		t.Errorf("stats = %+v", s)
	}
	if !strings.Contains(string(raw), `{"key":"service.name","value":{"stringValue":"pi"}}`) {
		t.Errorf("default service name missing: %s", raw)
	}
}

func TestSetupErrors(t *testing.T) {
	cfg := loadConfig(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"})
	_, err := telemetry.Setup(context.Background(), cfg, telemetry.WithStderr(newSyncBuffer()))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/ca.pem") {
		t.Errorf("Setup with a missing CA file: %v", err)
	}
	cfg = loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": t.TempDir() + "/no/such/dir/t.jsonl"})
	if _, err := telemetry.Setup(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Setup with an unwritable file: %v", err)
	}
}

func TestWithResource(t *testing.T) {
	cfg := loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": "-"})
	tel, stderr := setup(t, cfg, telemetry.WithResource(resource.NewSchemaless(attribute.String("host.name", "box"))))
	makeTrace(tel.TracerProvider())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), `{"key":"host.name","value":{"stringValue":"box"}}`) ||
		!strings.Contains(stderr.String(), `{"key":"service.name","value":{"stringValue":"pi"}}`) {
		t.Errorf("resource not merged: %s", stderr.String())
	}
}

// otlpCase runs traces and metrics to an in-process receiver.
type otlpCase struct {
	name     string
	protocol string
	tls      string // "", "server" or "mutual"
	gzip     bool
	bare     bool // endpoint given as host:port, plaintext by --insecure
}

func TestOTLPRoundTrip(t *testing.T) {
	for _, tc := range []otlpCase{
		{name: "grpc plaintext", protocol: "grpc"},
		{name: "grpc bare host:port", protocol: "grpc", bare: true},
		{name: "http bare host:port", protocol: "http/protobuf", bare: true},
		{name: "grpc TLS", protocol: "grpc", tls: "server"},
		{name: "grpc mutual TLS gzip", protocol: "grpc", tls: "mutual", gzip: true},
		{name: "http plaintext", protocol: "http/protobuf"},
		{name: "http TLS gzip", protocol: "http/protobuf", tls: "server", gzip: true},
		{name: "http mutual TLS", protocol: "http/protobuf", tls: "mutual"},
	} {
		t.Run(tc.name, func(t *testing.T) { testOTLPRoundTrip(t, tc) })
	}
}

func testOTLPRoundTrip(t *testing.T, tc otlpCase) {
	ctx := testCtx(t)
	p := newPKI(t)
	rcv := newReceiver()
	rcv.Answer = otlptest.RequireHeader("Authorization", "Bearer t0k,en")
	lis := listen(t)
	scheme := "http"
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol,
		// Percent-encoded, as the specification has header values.
		"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0k%2Cen",
		"OTEL_METRICS_EXPORTER":      "otlp",
		"OTEL_LOGS_EXPORTER":         "otlp",
		"OTEL_EXPORTER_OTLP_TIMEOUT": "20000",
	}
	if tc.tls != "" {
		scheme = "https"
		env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = p.caFile
		if tc.tls == "mutual" {
			env["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"] = p.clientCert
			env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = p.clientKey
		}
	}
	if tc.gzip {
		env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = scheme + "://" + lis.Addr().String()
	if tc.bare {
		_, port, _ := net.SplitHostPort(lis.Addr().String())
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "localhost:" + port
		env["OTEL_EXPORTER_OTLP_INSECURE"] = "true"
	}

	var serverTLS = p.serverTLS(tc.tls == "mutual")
	if tc.tls == "" {
		serverTLS = nil
	}
	if tc.protocol == "grpc" {
		var creds credentials.TransportCredentials
		if serverTLS != nil {
			creds = credentials.NewTLS(serverTLS)
		}
		serveGRPC(t, rcv, lis, creds)
	} else {
		serveHTTP(t, rcv, lis, serverTLS)
	}

	tel, stderr := setup(t, loadConfig(t, env), telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
		return spanlogs.New(lp, spanlogs.Config{}), nil
	}))
	tid := makeTrace(tel.TracerProvider())
	recordMetric(tel.MeterProvider())
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (stderr %q)", err, stderr.String())
	}
	waitFor(t, ctx, rcv, "3 spans", spanCount(3))
	waitFor(t, ctx, rcv, "metrics", hasMetrics)
	waitFor(t, ctx, rcv, "logs", hasLogs)

	if s := tel.Stats(); s != (telemetry.Stats{Traces: 1, Ended: 3, Exported: 3}) {
		t.Errorf("stats = %+v", s)
	}
	if stderr.String() != "" {
		t.Errorf("stderr = %q", stderr.String())
	}
	exports := rcv.Exports()
	var paths []string
	for _, e := range exports {
		if got := e.Header.Get("Authorization"); got != "Bearer t0k,en" {
			t.Errorf("authorization header = %q", got)
		}
		paths = append(paths, e.Path)
	}
	if tc.protocol != "grpc" {
		// The generic endpoint got the signal paths appended.
		slices.Sort(paths)
		if strings.Join(paths, " ") != "/v1/logs /v1/metrics /v1/traces" {
			t.Errorf("paths = %v", paths)
		}
		if tc.gzip && exports[0].Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("not gzipped: %v", exports[0].Header)
		}
	}
	got := rcv.Traces()[0].ResourceSpans[0]
	if trace.TraceID(got.ScopeSpans[0].Spans[0].TraceId) != tid {
		t.Errorf("trace id %x, want %s", got.ScopeSpans[0].Spans[0].TraceId, tid)
	}
	// The root, ended without settling, is a run cut short; its record
	// carries the root's ids.
	lr := rcv.Logs()[0].ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	if lr.EventName != "pi.run.cut" || trace.TraceID(lr.TraceId) != tid || trace.SpanID(lr.SpanId) != trace.SpanID(got.ScopeSpans[0].Spans[2].SpanId) {
		t.Errorf("log record = %v", lr)
	}
	m := rcv.Metrics()[0].ResourceMetrics[0].ScopeMetrics[0].Metrics[0]
	if m.Name != "pi.test.count" || m.GetSum().AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE ||
		m.GetSum().DataPoints[0].GetAsInt() != 3 {
		t.Errorf("metric = %v", m)
	}
	wantSummary := fmt.Sprintf("pi-otel: 1 trace (%s), 3 spans → otlp %s ", tid, tc.protocol)
	if !strings.HasPrefix(tel.Summary(), wantSummary) || !strings.Contains(tel.Summary(), ", 1 log record → otlp "+tc.protocol) || strings.Contains(tel.Summary(), ";") {
		t.Errorf("summary = %q, want prefix %q", tel.Summary(), wantSummary)
	}
}

func TestHTTPSignalEndpointUsedAsIs(t *testing.T) {
	ctx := testCtx(t)
	rcv := newReceiver()
	lis := listen(t)
	serveHTTP(t, rcv, lis, nil)
	tel, _ := setup(t, loadConfig(t, map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + lis.Addr().String() + "/custom/traces",
	}))
	makeTrace(tel.TracerProvider())
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, rcv, "3 spans", spanCount(3))
	if p := rcv.Exports()[0].Path; p != "/custom/traces" {
		t.Errorf("path = %q", p)
	}
}

func TestRefusedCredentials(t *testing.T) {
	// A collector that wants a header pi-otel lacks: one line that points
	// at --headers, and the spans count as failed.
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		rcv := newReceiver()
		rcv.Answer = otlptest.RequireHeader("Authorization", "secret")
		lis := listen(t)
		if protocol == "grpc" {
			serveGRPC(t, rcv, lis, nil)
		} else {
			serveHTTP(t, rcv, lis, nil)
		}
		tel, stderr := setup(t, loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
			"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=wrong-s3cr3t",
		}))
		makeTrace(tel.TracerProvider())
		_ = tel.Shutdown(ctx)
		out := stderr.String()
		t.Logf("stderr: %s", out)
		if strings.Count(out, "\n") != 1 || !strings.Contains(out, "refused the traces") ||
			!strings.Contains(out, "check --headers or OTEL_EXPORTER_OTLP_HEADERS") {
			t.Errorf("stderr = %q", out)
		}
		if strings.Contains(out, "s3cr3t") {
			t.Errorf("stderr leaks the header value: %q", out)
		}
		if s := tel.Stats(); s.Failed != 3 || s.Exported != 0 {
			t.Errorf("stats = %+v", s)
		}
		if !strings.Contains(tel.Summary(), "; 3 failed to export") {
			t.Errorf("summary = %q", tel.Summary())
		}
	})
}

// TestRefusedAsInvalid: spans the collector refuses as invalid (gRPC
// InvalidArgument, HTTP 400) are counted refused, tried once, and the
// summary says they are not sent again.
func TestRefusedAsInvalid(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		rcv := newReceiver()
		rcv.Answer = func(context.Context, otlptest.Export) error {
			return status.Error(grpccodes.InvalidArgument, "invalid spans")
		}
		lis := listen(t)
		if protocol == "grpc" {
			serveGRPC(t, rcv, lis, nil)
		} else {
			serveHTTP(t, rcv, lis, nil)
		}
		cfg := loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
			"PI_OTEL_FLUSH_TIMEOUT":       "1h", // a retry fails the test
		})
		cfg.Spool = telemetry.Spool{Dir: t.TempDir()} // a refused batch is not kept either
		tel, stderr := setup(t, cfg, telemetry.WithRetry(telemetry.Retry{InitialInterval: time.Hour, MaxInterval: time.Hour, MaxElapsedTime: 2 * time.Hour}))
		makeTrace(tel.TracerProvider())
		if err := tel.Shutdown(ctx); ctx.Err() != nil {
			t.Fatalf("Shutdown waited out the test's bound: %v", err)
		}
		if s := tel.Stats(); tel.Refused() != 3 || s.Spooled != 0 || s.Exported != 0 {
			t.Errorf("stats = %+v, %d refused", s, tel.Refused())
		}
		if sum := tel.Summary(); !strings.HasSuffix(sum, "; 3 spans dropped (refused by the collector as invalid; not sent again)") {
			t.Errorf("summary = %q", sum)
		}
		if out := stderr.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, "exporting traces to ") {
			t.Errorf("stderr = %q", out)
		}
	})
}

func TestTLSMismatch(t *testing.T) {
	// A TLS collector whose CA pi-otel was not given.
	ctx := testCtx(t)
	p := newPKI(t)
	lis := listen(t)
	serveGRPC(t, newReceiver(), lis, credentials.NewTLS(p.serverTLS(false)))
	tel, stderr := setup(t, loadConfig(t, map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://" + lis.Addr().String(),
	}), telemetry.WithRetry(telemetry.Retry{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: time.Millisecond}))
	makeTrace(tel.TracerProvider())
	_ = tel.Shutdown(ctx)
	t.Logf("stderr: %s", stderr.String())
	if out := stderr.String(); !strings.Contains(out, "TLS with the collector at "+lis.Addr().String()+" failed (") ||
		!strings.Contains(out, "--certificate") || strings.Count(out, "\n") != 1 {
		t.Errorf("stderr = %q", out)
	}
}

func TestCollectorDown(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		addr := freeport.Addr(t)
		// Nothing of pi-otel's may reach stdout, which belongs to Pi.
		stdout := captureStdout(t)

		tel, stderr := setup(t, loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr,
			"OTEL_METRICS_EXPORTER":       "otlp",
			"OTEL_BSP_MAX_QUEUE_SIZE":     "64",
			"OTEL_BSP_SCHEDULE_DELAY":     "1",
			// Shutdown must not wait this out: a collector found missing
			// at exit ends the flush. A hang here fails the test.
			"PI_OTEL_FLUSH_TIMEOUT": "1h",
		}))
		// The producer is never held up: far more spans than the queue
		// holds, while the exporter sits in its retry backoff.
		tr := tel.TracerProvider().Tracer("load")
		const n = 5000
		for range n {
			_, s := tr.Start(ctx, "s")
			s.End()
		}
		recordMetric(tel.MeterProvider())
		stderr.waitFor(t, ctx, "pi-otel: no collector at "+addr+
			" (connection refused); the endpoint comes from OTEL_EXPORTER_OTLP_ENDPOINT: start a collector there or fix it, or use --traces-exporter console\n")
		running := tel.Stats()
		if running.Dropped == 0 {
			t.Errorf("a full queue dropped nothing: %+v", running)
		}
		_ = tel.Shutdown(ctx)

		s := tel.Stats()
		if s.Ended != n || s.Exported != 0 || s.Failed+s.Dropped != n || s.Dropped < running.Dropped {
			t.Errorf("stats = %+v", s)
		}
		// One line for the whole run, traces and metrics together.
		if out := stderr.String(); strings.Count(out, "\n") != 1 {
			t.Errorf("stderr has more than one line:\n%s", out)
		}
		sum := tel.Summary()
		t.Logf("%s\n%s", stderr.String(), sum)
		if !strings.Contains(sum, fmt.Sprintf("%d spans dropped", s.Dropped)) ||
			(s.Failed > 0) != strings.Contains(sum, fmt.Sprintf("%d failed to export", s.Failed)) {
			t.Errorf("summary = %q for %+v", sum, s)
		}
		if out := stdout(); out != "" {
			t.Errorf("stdout got %q", out)
		}
	})
}

func TestCollectorDownQuiet(t *testing.T) {
	ctx := testCtx(t)
	tel, stderr := setup(t, loadConfig(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + freeport.Addr(t),
		"PI_OTEL_QUIET":               "true",
		"PI_OTEL_FLUSH_TIMEOUT":       "1h",
	}))
	makeTrace(tel.TracerProvider())
	_ = tel.Shutdown(ctx)
	if stderr.String() != "" {
		t.Errorf("quiet wrote %q", stderr.String())
	}
	if s := tel.Stats(); s.Exported != 0 || s.Failed+s.Dropped != 3 {
		t.Errorf("stats = %+v", s)
	}
}

func TestCollectorComesUpLate(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		addr := freeport.Addr(t)
		tel, stderr := setup(t, loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr,
			"OTEL_BSP_SCHEDULE_DELAY":     "1",
		}), telemetry.WithRetry(telemetry.Retry{
			InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond, MaxElapsedTime: time.Minute,
		}))
		tid := makeTrace(tel.TracerProvider())
		// The first attempt finds nobody...
		stderr.waitFor(t, ctx, "no collector at "+addr)
		// ...then the collector starts on that address, and a retry
		// delivers the spans while pi-otel still runs.
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("port %s was taken meanwhile: %v", addr, err)
		}
		rcv := newReceiver()
		if protocol == "grpc" {
			serveGRPC(t, rcv, lis, nil)
		} else {
			serveHTTP(t, rcv, lis, nil)
		}
		waitFor(t, ctx, rcv, "3 spans", spanCount(3))
		if err := tel.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if s := tel.Stats(); s != (telemetry.Stats{Traces: 1, Ended: 3, Exported: 3}) {
			t.Errorf("stats = %+v", s)
		}
		if got := rcv.Traces()[0].ResourceSpans[0].ScopeSpans[0].Spans[0].TraceId; trace.TraceID(got) != tid {
			t.Errorf("trace id %x", got)
		}
		if strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("stderr = %q", stderr.String())
		}
	})
}

// captureStdout swaps os.Stdout for a pipe until the test ends and returns
// what was written to it.
func captureStdout(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	var out *string
	restore := func() string {
		if out == nil {
			os.Stdout = old
			_ = w.Close()
			s := <-done
			out = &s
		}
		return *out
	}
	t.Cleanup(func() { restore() })
	return restore
}

func TestEachProcessIsItsOwnMetricStream(t *testing.T) {
	id := func(cfg telemetry.Config) string {
		tel, err := telemetry.Setup(context.Background(), cfg, telemetry.WithStderr(io.Discard))
		if err != nil {
			t.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		_, s := tel.TracerProvider().Tracer("t").Start(context.Background(), "s")
		defer s.End()
		ro, ok := s.(interface{ Resource() *resource.Resource })
		if !ok {
			t.Fatal("not an SDK span")
		}
		v, _ := ro.Resource().Set().Value("service.instance.id")
		return v.AsString()
	}
	cfg := loadConfig(t, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"})
	a, b := id(cfg), id(cfg)
	if a == "" || a == b {
		t.Fatalf("instance ids %q and %q", a, b)
	}
	cfg.ResourceAttributes = []attribute.KeyValue{attribute.String("service.instance.id", "mine")}
	if got := id(cfg); got != "mine" {
		t.Fatalf("user's instance id replaced by %q", got)
	}
}

// TestLogsCollectorDown: log records a missing collector never got are
// counted in the summary, the one stderr line names the collector, and the
// flush at exit gives up instead of waiting out the retries.
func TestLogsCollectorDown(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		addr := freeport.Addr(t)
		tel, stderr := setup(t, loadConfig(t, map[string]string{
			"OTEL_TRACES_EXPORTER":                              "none",
			"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL":                  protocol,
			"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT":                  "http://" + addr,
			"PI_OTEL_FLUSH_TIMEOUT":                             "1h", // a hang fails the test
			"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT":                   "30000",
			"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "cumulative",
		}), telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
			return spanlogs.New(lp, spanlogs.Config{}), nil
		}))
		makeTrace(tel.TracerProvider())
		_ = tel.Shutdown(ctx)
		out, sum := stderr.String(), tel.Summary()
		t.Logf("%s%s", out, sum)
		if !strings.Contains(out, "no collector at "+addr) || !strings.Contains(out, "--logs-exporter none") || strings.Count(out, "\n") != 1 {
			t.Errorf("stderr = %q", out)
		}
		if !strings.Contains(sum, ", 0 log records → otlp "+protocol) || !strings.HasSuffix(sum, "; 1 log record failed to export") {
			t.Errorf("summary = %q", sum)
		}
	})
}

// A collector that can never take the spans (TLS against plaintext, the
// wrong protocol for the port) fails the export at once: Shutdown does
// not sit out the retries, and the spans count as failed, not dropped.
func TestFutileExportFailsFast(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not a collector", http.StatusTeapot)
	}))
	defer plain.Close()
	host := strings.TrimPrefix(plain.URL, "http://")
	grpcLis, tlsLis := listen(t), listen(t)
	serveGRPC(t, newReceiver(), grpcLis, nil)
	serveHTTP(t, newReceiver(), tlsLis, newPKI(t).serverTLS(false))
	for _, c := range []struct {
		name, protocol, endpoint, says string
	}{
		{"grpc to an HTTP/1 server", "grpc", "http://" + host, "does not speak this protocol"},
		{"grpc TLS to plaintext", "grpc", "https://" + host, "TLS with the collector"},
		{"http TLS to plaintext", "http/protobuf", "https://" + host, "TLS with the collector"},
		{"http to a gRPC server", "http/protobuf", "http://" + grpcLis.Addr().String(), "does not speak this protocol"},
		// Its 400 refuses no spans: they count as failed, not refused.
		{"http plaintext to TLS", "http/protobuf", "http://" + tlsLis.Addr().String(), "wants TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t)
			tel, stderr := setup(t, loadConfig(t, map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": c.protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT": c.endpoint,
				"OTEL_METRICS_EXPORTER":       "otlp",
				// Only a futile export that gives up at once lets Shutdown
				// end before the test's own bound; a wait fails the test.
				"PI_OTEL_FLUSH_TIMEOUT":      "1h",
				"OTEL_EXPORTER_OTLP_TIMEOUT": "1h",
				"OTEL_BSP_EXPORT_TIMEOUT":    "1h",
			}), telemetry.WithRetry(telemetry.Retry{InitialInterval: time.Hour, MaxInterval: time.Hour, MaxElapsedTime: 2 * time.Hour}))
			makeTrace(tel.TracerProvider())
			recordMetric(tel.MeterProvider())
			if err := tel.Shutdown(ctx); ctx.Err() != nil {
				t.Fatalf("Shutdown waited out the test's bound: %v", err)
			}
			s := tel.Stats()
			if s.Failed != s.Ended || s.Dropped != 0 || s.Ended == 0 || tel.Refused() != 0 {
				t.Errorf("stats = %+v, %d refused; want every span failed, none dropped", s, tel.Refused())
			}
			out := stderr.String()
			if strings.Count(out, "\n") != 1 || !strings.Contains(out, c.says) {
				t.Errorf("stderr = %q; want one line saying %q", out, c.says)
			}
			if sum := tel.Summary(); !strings.Contains(sum, "failed to export") || strings.Contains(sum, "dropped") {
				t.Errorf("summary = %q", sum)
			}
		})
	}
}

// TestLogsConsole: --logs-exporter console writes one line per record on
// stderr, with its event, ids and attributes; a value with a newline stays
// on the record's line.
func TestLogsConsole(t *testing.T) {
	ctx := testCtx(t)
	tel, stderr := setup(t, loadConfig(t, map[string]string{
		"OTEL_TRACES_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "console",
	}), telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
		return spanlogs.New(lp, spanlogs.Config{}), nil
	}))
	_, root := tel.TracerProvider().Tracer("t").Start(ctx, "invoke_agent pi", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.Bool("pi.settled", true),
		attribute.String("pi.outcome", "ok"), attribute.String("note", "two\nlines"), attribute.String("why", "529 overloaded")))
	root.End()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	sc := root.SpanContext()
	out := stderr.String()
	want := fmt.Sprintf(`INFO pi.run.settled trace=%s span=%s gen_ai.operation.name=invoke_agent pi.settled=true pi.outcome=ok note="two\nlines" why="529 overloaded"`+"\n", sc.TraceID(), sc.SpanID())
	if !strings.HasPrefix(out, "pi-otel log ") || !strings.HasSuffix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("stderr = %q, want a line ending %q", out, want)
	}
	if !strings.Contains(tel.Summary(), ", 1 log record → console (stderr)") {
		t.Errorf("summary = %q", tel.Summary())
	}
}

// TestLogsLostAreCounted: records a collector never answers for, held up
// past the flush timeout or refused by a full queue, are counted as
// dropped in the summary, not lost quietly.
func TestLogsLostAreCounted(t *testing.T) {
	ctx := testCtx(t)
	// A collector that accepts connections and never answers.
	lis := listen(t)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	t.Cleanup(func() { lis.Close() })
	tel, stderr := setup(t, loadConfig(t, map[string]string{
		"OTEL_TRACES_EXPORTER":             "none",
		"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://" + lis.Addr().String(),
		// An attempt outlasts the flush at exit, so the records still
		// waiting then are held up past it, however slowly they came:
		// with attempts shorter than the flush, a producer slowed down by
		// a loaded machine saw every batch fail in turn, none dropped.
		"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "1000",
		"PI_OTEL_FLUSH_TIMEOUT":           "200ms",
	}), telemetry.WithRetry(telemetry.Retry{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxElapsedTime: 10 * time.Millisecond}),
		telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
			return spanlogs.New(lp, spanlogs.Config{}), nil
		}))
	const n = 5000 // more than the record queue holds
	tr := tel.TracerProvider().Tracer("t")
	for range n {
		_, s := tr.Start(ctx, "invoke_agent pi")
		s.End()
	}
	// The line about the collector comes when the first attempt times out.
	stderr.waitFor(t, ctx, "did not answer")
	_ = tel.Shutdown(ctx)
	sum := tel.Summary()
	t.Log(stderr.String() + sum)
	if !strings.Contains(stderr.String(), "the collector at "+lis.Addr().String()+" did not answer") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("stderr = %q, want one line about the collector", stderr.String())
	}
	m := regexp.MustCompile(`, (\d+) log records? → otlp grpc [^;]*; (?:(\d+) log records? failed to export, )?(\d+) log records? dropped$`).FindStringSubmatch(sum)
	if m == nil {
		t.Fatalf("summary = %q", sum)
	}
	exported, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	dropped, _ := strconv.Atoi(m[3])
	if exported != 0 || failed+dropped != n || dropped == 0 {
		t.Errorf("exported %d, failed %d, dropped %d of %d", exported, failed, dropped, n)
	}
}

// A refused connection names where the endpoint came from, and asks for
// one only when none was set.
func TestRefusedNamesTheEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		says string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "that is the default endpoint; set OTEL_EXPORTER_OTLP_ENDPOINT or --endpoint"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + freeport.Addr(t)}, "the endpoint comes from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	} {
		ctx := testCtx(t)
		cfg := loadConfig(t, c.env)
		cfg.Spool = telemetry.Spool{}
		if cfg.Traces.OTLP.EndpointFrom == "" {
			// Nothing may listen on the default port for this test.
			cfg.Traces.OTLP.Endpoint = "http://" + freeport.Addr(t)
		}
		tel, stderr := setup(t, cfg)
		makeTrace(tel.TracerProvider())
		_ = tel.Shutdown(ctx)
		if out := stderr.String(); !strings.Contains(out, "(connection refused); "+c.says) {
			t.Errorf("stderr = %q; want %q", out, c.says)
		}
	}
}
