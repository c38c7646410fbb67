//go:build realstack

// Package operator_test checks the operator's side end to end with real processes: the built
// pi-otel binary replaying real Pi captures and proxying a real Pi RPC session → OTLP → agent and
// gateway Collectors → prometheus exporter → a real Prometheus server, and the dashboards, alert
// rules and docker-compose file against what comes out. The temporality measurement drives the
// OpenTelemetry SDK directly (delta temporality, which pi-otel no longer exports).
package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// deltaPreference is the OTLP "delta" temporality preference: delta for counters and
// histograms, cumulative for up-down counters (pi-otel's --metrics-temporality delta).
func deltaPreference(k sdkmetric.InstrumentKind) metricdata.Temporality {
	switch k {
	case sdkmetric.InstrumentKindUpDownCounter, sdkmetric.InstrumentKindObservableUpDownCounter:
		return metricdata.CumulativeTemporality
	}
	return metricdata.DeltaTemporality
}

// piOtel stands in for one pi-otel process in the temporality measurement: a TracerProvider
// exporting spans over OTLP with the metrics package's SpanMetrics on it, and a MeterProvider
// exporting its metrics over OTLP with a temporality of the test's choosing.
type piOtel struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
}

type piOtelOptions struct {
	endpoint    string // OTLP/gRPC
	temporality sdkmetric.TemporalitySelector
	instanceID  string // service.instance.id, empty for none
	traces      bool   // also export the spans
}

func startPiOtel(t *testing.T, o piOtelOptions) *piOtel {
	t.Helper()
	ctx := context.Background()
	kvs := []attribute.KeyValue{attribute.String("service.name", "pi-otel")}
	if o.instanceID != "" {
		kvs = append(kvs, attribute.String("service.instance.id", o.instanceID))
	}
	res := resource.NewSchemaless(kvs...)
	mexp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(o.endpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithTemporalitySelector(o.temporality))
	if err != nil {
		t.Fatal(err)
	}
	// The interval is long on purpose: exports happen at ForceFlush/Shutdown, as in a short run.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(time.Hour))))
	sm, err := metrics.NewSpanMetrics(mp)
	if err != nil {
		t.Fatal(err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSpanProcessor(sm)}
	if o.traces {
		texp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(o.endpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, sdktrace.WithSyncer(texp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &piOtel{tp: tp, mp: mp, tracer: tp.Tracer("operator-test")}
}

// flush exports whatever was recorded since the last export.
func (p *piOtel) flush(t *testing.T) { both(t, p.tp.ForceFlush, p.mp.ForceFlush) }

// shutdown is the end of the process: a final export, then nothing.
func (p *piOtel) shutdown(t *testing.T) { both(t, p.tp.Shutdown, p.mp.Shutdown) }

// both calls the traces' and the metrics' half of an operation.
func both(t *testing.T, traces, metrics func(context.Context) error) {
	t.Helper()
	for _, f := range []func(context.Context) error{traces, metrics} {
		if err := f(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// promServer is a real Prometheus (Debian package) scraping the gateway's prometheus exporter.
type promServer struct {
	addr string
	proc *exec.Cmd
	done chan struct{}
}

// startPrometheus runs Prometheus on loopback scraping the gateway's prometheus exporter
// (exporter, with honor_labels as in the shipped config) and, if set, the gateway's own telemetry.
func startPrometheus(t *testing.T, exporter, telemetry string, ruleFiles []string) *promServer {
	t.Helper()
	bin := proc.Tool(t, "prometheus", "Debian package prometheus")
	dir := t.TempDir()
	var rules strings.Builder
	for _, f := range ruleFiles {
		fmt.Fprintf(&rules, "  - %q\n", f)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
%s
scrape_configs:
  - job_name: pi-otel-gateway
    honor_labels: true
    static_configs:
      - targets: [%q]
`, rules.String(), exporter)
	if telemetry != "" {
		cfg += fmt.Sprintf("  - job_name: otel-collectors\n    static_configs:\n      - targets: [%q]\n", telemetry)
	}
	if len(ruleFiles) == 0 {
		cfg = strings.Replace(cfg, "rule_files:\n\n", "", 1)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The listen port comes from freeport.Addr and may be taken meanwhile: retry with a fresh one.
	for attempt := 1; ; attempt++ {
		p, logs, err := runPrometheus(t, bin, cfgPath, filepath.Join(dir, fmt.Sprint("data", attempt)))
		if err == nil {
			return p
		}
		if attempt == 3 || !strings.Contains(logs, "address already in use") {
			t.Fatalf("%v:\n%s", err, logs)
		}
	}
}

func runPrometheus(t *testing.T, bin, cfgPath, dataDir string) (*promServer, string, error) {
	p := &promServer{addr: freeport.Addr(t), done: make(chan struct{})}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+dataDir,
		"--web.listen-address="+p.addr,
		"--enable-feature=exemplar-storage",
	)
	logPath := dataDir + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.proc = cmd
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	readLogs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	// Readiness wait: a liveness guard, not a timing assertion.
	exited, ready := false, false
	wait.Until(60*time.Second, func() bool {
		select {
		case <-p.done:
			exited = true
			return true
		default:
		}
		if resp, err := http.Get("http://" + p.addr + "/-/ready"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
		return ready
	})
	switch {
	case exited:
		return nil, readLogs(), fmt.Errorf("prometheus exited")
	case !ready:
		return nil, readLogs(), fmt.Errorf("prometheus not ready after 60s")
	}
	return p, "", nil
}

// api calls a Prometheus HTTP API path and decodes its data field into out.
func (p *promServer) api(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	code, body := collectortest.Get(t, "http://"+p.addr+path+"?"+params.Encode())
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	if env.Status != "success" {
		t.Fatalf("%s %v: %s", path, params, env.Error)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// query evaluates an instant PromQL query now and returns label-set → value.
func (p *promServer) query(t *testing.T, q string) map[string]float64 {
	t.Helper()
	return p.queryAt(t, q, time.Time{})
}

// one runs an instant query that must return exactly one series, and
// returns its value.
func (p *promServer) one(t *testing.T, q string) float64 {
	t.Helper()
	r := p.query(t, q)
	if len(r) != 1 {
		t.Fatalf("%s: %d results %v, want 1", q, len(r), r)
	}
	for _, v := range r {
		return v
	}
	return 0
}

// queryAt evaluates an instant PromQL query at a time (zero: now).
func (p *promServer) queryAt(t *testing.T, q string, at time.Time) map[string]float64 {
	t.Helper()
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	params := url.Values{"query": {q}}
	if !at.IsZero() {
		params.Set("time", promTime(at))
	}
	p.api(t, "/api/v1/query", params, &data)
	out := map[string]float64{}
	for _, r := range data.Result {
		out[labelKey(r.Metric)] = sampleValue(r.Value[1])
	}
	return out
}

// queryRange evaluates q at every step from start to end, as a rule group with that interval
// would, and returns label-set → the values at each step.
func (p *promServer) queryRange(t *testing.T, q string, start, end time.Time, step time.Duration) map[string][]float64 {
	t.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	p.api(t, "/api/v1/query_range", url.Values{"query": {q}, "start": {promTime(start)}, "end": {promTime(end)},
		"step": {fmt.Sprint(step.Seconds())}}, &data)
	out := map[string][]float64{}
	for _, r := range data.Result {
		for _, v := range r.Values {
			out[labelKey(r.Metric)] = append(out[labelKey(r.Metric)], sampleValue(v[1]))
		}
	}
	return out
}

func promTime(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixMilli())/1000) }

func sampleValue(v any) float64 {
	var f float64
	if s, ok := v.(string); ok {
		fmt.Sscan(s, &f)
	}
	return f
}

// series returns every series Prometheus holds: name → label names seen on it.
func (p *promServer) series(t *testing.T) map[string]map[string]bool {
	t.Helper()
	var data []map[string]string
	p.api(t, "/api/v1/series", url.Values{"match[]": {`{__name__=~".+"}`}}, &data)
	out := map[string]map[string]bool{}
	for _, s := range data {
		name := s["__name__"]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for l := range s {
			if l != "__name__" {
				out[name][l] = true
			}
		}
	}
	return out
}

func labelKey(m map[string]string) string {
	var parts []string
	for k, v := range m {
		if k == "__name__" {
			continue
		}
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func TestMain(m *testing.M) {
	code := m.Run()
	proc.RemoveShared() // the pi-otel piotel.Binary built
	os.Exit(code)
}
