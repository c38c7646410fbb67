//go:build realstack

package collector_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
	"github.com/pi-otel/pi-otel/internal/testutil/piotel"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// Scale-out, proven on real processes: pi-otel replays of real Pi captures → one agent (the
// shipped agent.yaml, routing by trace id) → two gateways (the shipped gateway.yaml) → Jaeger.
//
// Each gateway's own output is read back separately. Every gateway runs the shipped config plus
// tapOverlay, which only rewires its second trace exporter (otlp_grpc/tempo, pointed at a Jaeger of
// its own) from after tail sampling to before it: that Jaeger, the "tap", then holds every span
// the gateway received, and the gateway's own Jaeger holds what its sampler kept.
const tapOverlay = `service:
  pipelines:
    traces/in:
      exporters: [span_metrics, forward/sampling, otlp_grpc/tempo]
    traces/sampled:
      exporters: [otlp_grpc/jaeger]
`

// replayCopies is how many times each capture is replayed: 13 captures × 4 = 52 pi-otel
// processes, 8 at a time, each its own trace.
const (
	replayCopies   = 4
	replayParallel = 8
)

type scaleStack struct {
	*collectortest.Stack
}

func startScaleStack(t *testing.T, o collectortest.StackOptions) scaleStack {
	t.Helper()
	overlay := filepath.Join(t.TempDir(), "tap.yaml")
	if err := os.WriteFile(overlay, []byte(tapOverlay), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Gateways = 2
	o.BackendPerGateway = true
	o.GatewayOverlays = append(o.GatewayOverlays, overlay)
	return scaleStack{collectortest.StartStack(t, o)}
}

// tap is what gateway i received; out is what it exported after sampling.
func (s scaleStack) tap(t *testing.T, i int) map[string][]*jaegertest.Span {
	return s.Gateways[i].Tempo.SpansByTrace(t)
}

func (s scaleStack) out(t *testing.T, i int) map[string][]*jaegertest.Span {
	return s.Gateways[i].Jaeger.SpansByTrace(t)
}

// captureFiles lists the real Pi 1.6.0 json-mode captures; the scale tests need enough of them.
func captureFiles(t *testing.T) []string {
	t.Helper()
	out := piotel.JSONCaptures(t)
	if len(out) < 10 {
		t.Fatalf("only %d captures in testdata/captures/pi-1.6.0", len(out))
	}
	return out
}

// replayAll runs one pi-otel replay process per file, parallel at a time, alternating OTLP/gRPC
// and OTLP/HTTP into the agent.
func replayAll(t *testing.T, bin string, s scaleStack, files []string, parallel int) []piotel.Replayed {
	t.Helper()
	return replayAllTrouble(t, bin, s, files, parallel, false)
}

// replayAllTrouble is replayAll, accepting replays that report export trouble when
// troubleAllowed (their summary says how many spans failed).
func replayAllTrouble(t *testing.T, bin string, s scaleStack, files []string, parallel int, troubleAllowed bool) []piotel.Replayed {
	t.Helper()
	var (
		mu  sync.Mutex
		out []piotel.Replayed
		wg  sync.WaitGroup
	)
	sem := make(chan struct{}, parallel)
	for i, f := range files {
		endpoint, protocol := "http://"+s.AgentOTLP, "grpc"
		if i%2 == 1 {
			endpoint, protocol = "http://"+s.AgentOTLPHTTP, "http/protobuf"
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := piotel.Replay(bin, f, endpoint, protocol)
			if err == nil && r.Trouble != "" && !troubleAllowed {
				err = fmt.Errorf("replay %s: export trouble: %s", f, r.Trouble)
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(out) != len(files) {
		t.FailNow()
	}
	return out
}

func copies(files []string, n int) []string {
	var out []string
	for range n {
		out = append(out, files...)
	}
	return out
}

func spanCount(m map[string][]*jaegertest.Span) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

// distinctSpans counts distinct span ids: a retried batch delivered twice shows up as a
// difference between spanCount and this.
func distinctSpans(m map[string][]*jaegertest.Span) int {
	seen := map[string]bool{}
	for _, spans := range m {
		for _, s := range spans {
			seen[s.TraceID+s.SpanID] = true
		}
	}
	return len(seen)
}

// interesting says why tail sampling must keep a trace: an error, a retry or a compaction.
func interesting(spans []*jaegertest.Span) []string {
	var why []string
	for _, s := range spans {
		switch {
		case s.Status.Code == "error" && !slices.Contains(why, "error"):
			why = append(why, "error")
		case s.Name == "pi.retry" && !slices.Contains(why, "retry"):
			why = append(why, "retry")
		case s.Name == "pi.compaction" && !slices.Contains(why, "compaction"):
			why = append(why, "compaction")
		}
	}
	return why
}

// waitForSpans waits until the gateways' taps together hold want distinct spans. Distinct,
// because a retried batch delivered twice would otherwise end the wait while a trace the agent
// still holds for a restarted gateway is on its way.
func waitForSpans(t *testing.T, s scaleStack, want int, within time.Duration) {
	t.Helper()
	var have [2]int
	collectortest.Eventually(t, within, func() bool {
		have = [2]int{distinctSpans(s.tap(t, 0)), distinctSpans(s.tap(t, 1))}
		return have[0]+have[1] >= want
	}, func() string {
		return fmt.Sprintf("gateways received %d + %d spans, want %d\nagent:\n%s", have[0], have[1], want, s.Agent.Logs())
	})
}

// TestRoutingByTraceID: 52 concurrent pi-otel replays of the real captures through one agent to
// two gateways at baseline sampling 0. Every trace reaches exactly one gateway, whole; both
// gateways get traces; each gateway keeps exactly the traces with an error, a retry or a
// compaction, whole, and drops every plain one.
func TestRoutingByTraceID(t *testing.T) {
	t.Parallel()
	s := startScaleStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "2s"})
	bin := piotel.Binary(t)
	reps := replayAll(t, bin, s, copies(captureFiles(t), replayCopies), replayParallel)

	sent, single := 0, map[string]piotel.Replayed{}
	traces := 0
	for _, r := range reps {
		sent += r.Spans
		traces += r.Traces
		if r.TraceID != "" {
			single[r.TraceID] = r
		}
	}
	waitForSpans(t, s, sent, 2*time.Minute)
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), s.tap(t, 1)}
	if got := distinctSpans(taps[0]) + distinctSpans(taps[1]); got != sent {
		t.Errorf("gateways received %d distinct spans, the replays sent %d", got, sent)
	}
	if got := len(taps[0]) + len(taps[1]); got != traces {
		t.Errorf("gateways received %d traces, the replays made %d", got, traces)
	}
	for i, tp := range taps {
		if len(tp) == 0 {
			t.Errorf("gateway-%d received no trace: nothing was routed to it", i+1)
		}
	}

	// Every trace at exactly one gateway, and whole there.
	owner := map[string]int{}
	for i, tp := range taps {
		for id, spans := range tp {
			if _, both := taps[1-i][id]; both {
				t.Errorf("trace %s reached both gateways (%d and %d spans)", id, len(spans), len(taps[1-i][id]))
			}
			owner[id] = i
			if r, ok := single[id]; ok && len(spans) != r.Spans {
				t.Errorf("trace %s (%s) reached gateway-%d with %d of its %d spans", id, filepath.Base(r.File), i+1, len(spans), r.Spans)
			}
		}
	}
	for id, r := range single {
		if _, ok := owner[id]; !ok {
			t.Errorf("trace %s (%s) reached no gateway", id, filepath.Base(r.File))
		}
	}

	// Sampling: wait until every received trace has been decided, then compare.
	var decided float64
	collectortest.Eventually(t, time.Minute, func() bool {
		decided = 0
		for _, g := range s.Gateways {
			decided += tailSampled(t, g.Telemetry, "true") + tailSampled(t, g.Telemetry, "false")
		}
		return decided >= float64(traces)
	}, func() string { return fmt.Sprintf("gateways decided %v traces, want %d", decided, traces) })

	// What each gateway must keep, from what it received: then wait for its exports to land.
	reasons := map[string]int{}
	want := map[string][]string{} // kept trace → why
	var plain int
	for id, i := range owner {
		if why := interesting(taps[i][id]); len(why) > 0 {
			want[id] = why
			for _, w := range why {
				reasons[w]++
			}
		} else {
			plain++
		}
	}
	var outs [2]map[string][]*jaegertest.Span
	missing := 0
	collectortest.Eventually(t, time.Minute, func() bool {
		outs = [2]map[string][]*jaegertest.Span{s.out(t, 0), s.out(t, 1)}
		missing = 0
		for id := range want {
			if len(outs[owner[id]][id]) < len(taps[owner[id]][id]) {
				missing++
			}
		}
		return missing == 0
	}, func() string { return fmt.Sprintf("%d of %d kept traces not (yet) exported whole", missing, len(want)) })
	for id, i := range owner {
		got, inOwn := outs[i][id]
		if _, inOther := outs[1-i][id]; inOther {
			t.Errorf("trace %s was exported by gateway-%d, which never received it", id, 2-i)
		}
		why, keep := want[id]
		switch {
		case !keep && inOwn:
			t.Errorf("plain trace %s kept at sampling 0", id)
		case keep && len(got) != len(taps[i][id]):
			t.Errorf("trace %s (%v) kept with %d of its %d spans", id, why, len(got), len(taps[i][id]))
		}
	}
	kept := len(want)
	for _, w := range []string{"error", "retry", "compaction"} {
		if reasons[w] == 0 {
			t.Errorf("no %s trace among the replays: the captures no longer cover the policy", w)
		}
	}
	if plain == 0 {
		t.Error("no plain trace among the replays")
	}
	t.Logf("%d replays, %d traces, %d spans: gateway-1 received %d traces, gateway-2 %d; kept %d (error %d, retry %d, compaction %d), dropped %d plain",
		len(reps), traces, sent, len(taps[0]), len(taps[1]), kept, reasons["error"], reasons["retry"], reasons["compaction"], plain)
}

// owners maps each trace id in the taps to the gateways that received it.
func owners(taps [2]map[string][]*jaegertest.Span) map[string][]int {
	out := map[string][]int{}
	for i, tp := range taps {
		for id := range tp {
			out[id] = append(out[id], i)
		}
	}
	return out
}

func sumSpans(reps []piotel.Replayed) int {
	n := 0
	for _, r := range reps {
		n += r.Spans
	}
	return n
}

// checkWhole fails for every single-trace replay in reps that did not reach exactly one
// gateway with all its spans, and returns how many did.
func checkWhole(t *testing.T, what string, reps []piotel.Replayed, taps [2]map[string][]*jaegertest.Span) (whole int) {
	t.Helper()
	own := owners(taps)
	for _, r := range reps {
		if r.TraceID == "" {
			continue
		}
		gw := own[r.TraceID]
		switch {
		case len(gw) == 0:
			t.Errorf("%s: trace %s (%s) reached no gateway", what, r.TraceID, filepath.Base(r.File))
		case len(gw) > 1:
			t.Errorf("%s: trace %s (%s) reached both gateways", what, r.TraceID, filepath.Base(r.File))
		default:
			spans := taps[gw[0]][r.TraceID]
			seen := map[string]bool{}
			for _, s := range spans {
				seen[s.SpanID] = true
			}
			if len(seen) != r.Spans {
				t.Errorf("%s: trace %s (%s) reached gateway-%d with %d of its %d spans", what, r.TraceID, filepath.Base(r.File), gw[0]+1, len(seen), r.Spans)
				continue
			}
			whole++
		}
	}
	return whole
}

// TestGatewayKilledMidStream kills gateway-2 (SIGKILL) between two waves of replays, replays a
// third wave while it is down, restarts it on the same address and replays a last wave. What it
// proves: nothing the agent accepted is lost or split, however the outage falls. What it
// reports (t.Log, and docs/operations.md): where the traces of the down gateway went, how many
// spans were delivered twice, and how many traces the killed gateway lost from its sampled output
// (those waiting in decision_wait when it died).
func TestGatewayKilledMidStream(t *testing.T) {
	t.Parallel()
	s := startScaleStack(t, collectortest.StackOptions{
		SamplePercentage: "100",
		DecisionWait:     "10s", // long enough that wave 1 is surely still undecided at the kill
		AgentEnv:         map[string]string{"PI_OTEL_AGENT_GATEWAY_RETRY": "5s"},
	})
	bin := piotel.Binary(t)
	files := captureFiles(t)

	before := replayAll(t, bin, s, copies(files, 2), replayParallel)
	waitForSpans(t, s, sumSpans(before), 2*time.Minute)
	onGW2 := map[string]bool{}
	for id := range s.tap(t, 1) {
		onGW2[id] = true
	}
	s.Gateways[1].Proc.Kill(t)
	killed := time.Now()

	during := replayAll(t, bin, s, copies(files, 2), replayParallel)
	// Give the agent's retries (5 s per gateway, then the exporter's own backoff) time to show
	// what they do with the down gateway's share while it is down. Real time is the point: the
	// retries run on the agent's clock.
	time.Sleep(20 * time.Second)
	tap1During := s.tap(t, 0)
	rerouted, waiting, singles := 0, 0, 0
	for _, r := range during {
		if r.TraceID == "" {
			continue
		}
		singles++
		if _, ok := tap1During[r.TraceID]; ok {
			continue
		}
		waiting++ // neither delivered to gateway-1 nor (gateway-2 is down) anywhere else yet
	}
	s.Gateways[1].Proc = s.Gateways[1].Proc.Restart(t)
	down := time.Since(killed)

	after := replayAll(t, bin, s, copies(files, 1), replayParallel)
	all := append(append(append([]piotel.Replayed{}, before...), during...), after...)
	waitForSpans(t, s, sumSpans(all), 3*time.Minute)
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), s.tap(t, 1)}
	whole := checkWhole(t, "after the restart", all, taps)
	for _, r := range during {
		if gw := owners(taps)[r.TraceID]; r.TraceID != "" && len(gw) == 1 && gw[0] == 0 {
			if _, early := tap1During[r.TraceID]; !early {
				rerouted++ // reached gateway-1, but only after gateway-2 was back: late, not re-routed
			}
		}
	}
	dups := [2]int{spanCount(taps[0]) - distinctSpans(taps[0]), spanCount(taps[1]) - distinctSpans(taps[1])}

	// The killed gateway's sampled output: wave-1 traces it had received and not yet decided.
	var lost, sampledBefore int
	collectortest.Eventually(t, time.Minute, func() bool {
		decided := tailSampled(t, s.Gateways[0].Telemetry, "true") + tailSampled(t, s.Gateways[1].Telemetry, "true")
		return decided >= float64(len(taps[0])+len(taps[1])-len(onGW2))
	}, func() string { return "the gateways did not decide every trace" })
	out2 := s.out(t, 1)
	for id := range onGW2 {
		sampledBefore++
		if _, ok := out2[id]; !ok {
			lost++
		}
	}
	t.Logf("gateway-2 down %.1fs; %d replays in all, %d single-trace replays whole at exactly one gateway; spans delivered twice: %d to gateway-1, %d to gateway-2", down.Seconds(), len(all), whole, dups[0], dups[1])
	t.Logf("while down: %d of the %d single-trace wave-2 replays were not at gateway-1 after 20s (gateway-2's share, held by the agent); %d of them reached gateway-1 later (re-routed)", waiting, singles, rerouted)
	t.Logf("gateway-2 had received %d traces before the kill; %d of them never left it through tail sampling (lost with its decision_wait buffer)", sampledBefore, lost)
}

// TestAgentKilledWithFullQueue: both gateways down, replays into the agent until its persistent
// queue holds all of them, the agent SIGKILLed, gateways and agent restarted on the same queue
// directory: every trace arrives, whole, at exactly one gateway.
func TestAgentKilledWithFullQueue(t *testing.T) {
	t.Parallel()
	s := startScaleStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "2s"})
	bin := piotel.Binary(t)
	for _, g := range s.Gateways {
		g.Proc.Kill(t)
	}
	reps := replayAll(t, bin, s, copies(captureFiles(t), 2), replayParallel)
	sent := sumSpans(reps)

	// The agent has accepted every span (its receiver counted them) and holds them in its queue.
	var accepted, queued float64
	collectortest.Eventually(t, time.Minute, func() bool {
		accepted = metricAt(t, s.AgentTelemetry, "otelcol_receiver_accepted_spans", "")
		queued = metricAt(t, s.AgentTelemetry, "otelcol_exporter_queue_size", `exporter="load_balancing/traces"`)
		return accepted >= float64(sent) && queued > 0
	}, func() string {
		return fmt.Sprintf("agent accepted %v of %d spans, queue holds %v", accepted, sent, queued)
	})
	s.Agent.Kill(t)
	if n := spanCount(s.tap(t, 0)) + spanCount(s.tap(t, 1)); n != 0 {
		t.Fatalf("%d spans reached a gateway that was down", n)
	}
	for i, g := range s.Gateways {
		s.Gateways[i].Proc = g.Proc.Restart(t)
	}
	s.Agent = s.Agent.Restart(t)

	waitForSpans(t, s, sent, 3*time.Minute)
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), s.tap(t, 1)}
	whole := checkWhole(t, "after the agent restart", reps, taps)
	if got := distinctSpans(taps[0]) + distinctSpans(taps[1]); got != sent {
		t.Errorf("gateways received %d distinct spans, the replays sent %d", got, sent)
	}
	dup := spanCount(taps[0]) + spanCount(taps[1]) - distinctSpans(taps[0]) - distinctSpans(taps[1])
	t.Logf("%d replays, %d spans accepted while both gateways were down, queue size %v requests at the SIGKILL; after the restart %d traces whole at exactly one gateway, %d spans lost, %d delivered twice",
		len(reps), sent, queued, whole, sent-(distinctSpans(taps[0])+distinctSpans(taps[1])), dup)
}

// TestGatewayRemovedFromRing: gateway-2 dies for good while replays go on; the operator removes
// it from PI_OTEL_GATEWAYS and restarts the agent gracefully (SIGTERM), as the DNS resolver would
// drop a pod that left. The share the agent held for gateway-2 is re-routed to gateway-1 from the
// persistent queue: every trace sent after the death arrives whole at gateway-1.
func TestGatewayRemovedFromRing(t *testing.T) {
	t.Parallel()
	s := startScaleStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "2s",
		AgentEnv: map[string]string{"PI_OTEL_AGENT_GATEWAY_RETRY": "5s"}})
	bin := piotel.Binary(t)
	s.Gateways[1].Proc.Kill(t)
	reps := replayAll(t, bin, s, copies(captureFiles(t), 2), replayParallel)
	sent := sumSpans(reps)
	// Wait until gateway-1 has its own share, so what is missing is gateway-2's, held by the agent.
	held, last := sent, -1
	collectortest.Eventually(t, time.Minute, func() bool {
		// gateway-1's count is settled when it holds across a second. Real time is the point:
		// only the count staying put over a while says no more is coming.
		time.Sleep(time.Second)
		now := distinctSpans(s.tap(t, 0))
		settled := now == last && now > 0
		last, held = now, sent-now
		return settled && metricAt(t, s.AgentTelemetry, "otelcol_exporter_queue_size", `exporter="load_balancing/traces"`) > 0
	}, func() string { return "gateway-1 got nothing, or the agent holds nothing" })

	// Stopping, the agent hands its queue on towards the dead gateway-2, each request retrying for
	// PI_OTEL_AGENT_GATEWAY_RETRY (5 s here) first: measured from 1.4 s to over 30 s.
	stopAt := time.Now()
	s.Agent.StopWithin(t, 3*time.Minute)
	t.Logf("the agent stopped in %v", time.Since(stopAt).Round(time.Millisecond))
	opts := s.Agent.Opts
	opts.Env = maps.Clone(opts.Env)
	opts.Env["PI_OTEL_GATEWAYS"] = "[" + s.Gateways[0].OTLP + "]"
	s.Agent = otelcol.Start(t, opts)

	collectortest.Eventually(t, 2*time.Minute, func() bool { return distinctSpans(s.tap(t, 0)) >= sent },
		func() string {
			return fmt.Sprintf("gateway-1 holds %d of %d spans\nagent:\n%s", distinctSpans(s.tap(t, 0)), sent, s.Agent.Logs())
		})
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), {}}
	whole := checkWhole(t, "after the re-route", reps, taps)
	t.Logf("%d replays, %d spans; the agent held %d spans for the dead gateway-2; after it left the ring all reached gateway-1: %d single-trace replays whole, %d spans twice",
		len(reps), sent, held, whole, spanCount(taps[0])-distinctSpans(taps[0]))
}

// TestAgentQueueAtCapacity: both gateways down and the agent's queue at capacity (8 requests per
// signal), so the agent refuses what does not fit and pi-otel reports it (failed or dropped); then the agent is
// SIGKILLed and everything restarted. Every span the agent accepted arrives, whole traces at one
// gateway; every span it did not accept is one pi-otel reported as failed: none vanishes.
func TestAgentQueueAtCapacity(t *testing.T) {
	t.Parallel()
	s := startScaleStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "2s",
		AgentEnv: map[string]string{"PI_OTEL_AGENT_QUEUE_SIZE": "8"}})
	bin := piotel.Binary(t)
	for _, g := range s.Gateways {
		g.Proc.Kill(t)
	}
	reps := replayAllTrouble(t, bin, s, copies(captureFiles(t), 2), replayParallel, true)
	sent, failed := 0, 0
	var whole []piotel.Replayed // replays the agent took entirely
	for _, r := range reps {
		sent += r.Spans
		failed += r.Failed
		if r.Failed == 0 {
			whole = append(whole, r)
		}
	}
	if failed == 0 {
		t.Fatalf("the agent's queue never refused anything: the test did not reach capacity")
	}
	accepted := metricAt(t, s.AgentTelemetry, "otelcol_receiver_accepted_spans", "")
	queued := metricAt(t, s.AgentTelemetry, "otelcol_exporter_queue_size", `exporter="load_balancing/traces"`)
	s.Agent.Kill(t)
	for i, g := range s.Gateways {
		s.Gateways[i].Proc = g.Proc.Restart(t)
	}
	s.Agent = s.Agent.Restart(t)

	waitForSpans(t, s, int(accepted), 3*time.Minute)
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), s.tap(t, 1)}
	delivered := distinctSpans(taps[0]) + distinctSpans(taps[1])
	if float64(delivered) != accepted {
		t.Errorf("the agent accepted %v spans, the gateways received %d", accepted, delivered)
	}
	if delivered+failed != sent {
		t.Errorf("pi-otel made %d spans: %d delivered + %d reported undelivered leaves %d unaccounted for", sent, delivered, failed, sent-delivered-failed)
	}
	n := checkWhole(t, "after the restart", whole, taps)
	t.Logf("%d replays, %d spans: the full queue (%v requests) refused %d, which pi-otel reported undelivered; the agent had accepted %v; after SIGKILL and restart %d delivered, %d fully accepted single-trace replays whole",
		len(reps), sent, queued, failed, accepted, delivered, n)
}

func TestMain(m *testing.M) {
	code := m.Run()
	proc.RemoveShared() // the pi-otel piotel.Binary built
	os.Exit(code)
}
