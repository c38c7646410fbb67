//go:build realstack

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// TestRun runs the real Pi under `pi-otel run`, one scenario per subtest,
// all exporting to one Jaeger, each under a service of its own.
func TestRun(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *jaegertest.Jaeger)
	}{
		{"text", runText},
		{"bash-tool-and-replay", runBashToolAndReplay},
		{"parallel-tools", runParallelTools},
		{"retry-529", runRetry529},
		{"retry-exhausted", runRetryExhausted},
		{"overflow", runOverflow},
		{"threshold-compaction", runThresholdCompaction},
		{"big-output", runBigOutput},
		{"sigterm-mid-tool", runSigterm},
		{"traceparent-http", func(t *testing.T, j *jaegertest.Jaeger) { runTraceparent(t, j, true) }},
		{"traceparent-reserved-grpc", func(t *testing.T, j *jaegertest.Jaeger) { runTraceparent(t, j, false) }},
		{"pi-1.0.3", func(t *testing.T, j *jaegertest.Jaeger) { runOlderPi(t, j, pitest.EnvPi103, "pi-1.0.3", "settled") }},
		{"pi-0.73", func(t *testing.T, j *jaegertest.Jaeger) { runOlderPi(t, j, pitest.EnvPi073, "pi-0.73.x", "agent_end") }},
		{"console-default", func(t *testing.T, _ *jaegertest.Jaeger) { runConsoleDefault(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, j)
		})
	}
}

// v160 is the Pi whose captures' golden trees the live runs are held to.
const v160 = "pi-1.6.0"

// tracedCapture runs capture scenario name under `pi-otel run` as
// service (see traced), checks that Pi's stream still shows what the
// scenario claims and that Jaeger holds the golden tree of the capture of
// version's Pi, and returns the setup, the result and the traces, oldest
// first.
func tracedCapture(t *testing.T, j *jaegertest.Jaeger, version, name, service string, opts ...pitest.Option) (*setup, *result, []*jaegertest.Trace) {
	t.Helper()
	s := prepare(t, name, opts...)
	r, traces := traced(t, j, s, service)
	s.check(t, r)
	wantTree(t, version, name, traces...)
	return s, r, traces
}

// runText: a plain answer is root → run → turn → chat, with Pi's usage and
// cost on the chat span and summed on the root; pi-otel's stdout holds the
// records a direct run of the same script writes.
func runText(t *testing.T, j *jaegertest.Jaeger) {
	_, r, traces := tracedCapture(t, j, v160, "text", "e2e-text")
	tr := one(t, traces)
	recs := records(t, r.stdout)
	root := root(t, tr)
	wantAttrs(t, root, map[string]any{
		"gen_ai.operation.name":  "invoke_agent",
		"gen_ai.agent.name":      "pi",
		"gen_ai.provider.name":   pitest.Provider,
		"gen_ai.request.model":   "fake-model",
		"gen_ai.conversation.id": sessionID(t, recs),
		"pi.settled":             true,
		"pi.end_reason":          "settled",
		"pi.outcome":             "ok",
		"pi.agent_runs":          int64(1),
		"pi.turns":               int64(1),
		"pi.tool_calls":          int64(0),
	})
	if root.Status.Code == "error" {
		t.Errorf("root status %+v", root.Status)
	}
	chat := only(t, tr, "chat fake-model")
	wantAttrs(t, chat, map[string]any{
		"gen_ai.operation.name": "chat",
		"gen_ai.provider.name":  pitest.Provider,
		"gen_ai.request.model":  "fake-model",
		"gen_ai.response.model": "fake-model",
		"gen_ai.response.id":    "chatcmpl-fake-0",
		"pi.raw_stop_reason":    "stop",
	})
	if fr, _ := chat.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "stop" {
		t.Errorf("finish reasons %#v", chat.Attrs["gen_ai.response.finish_reasons"])
	}
	positive(t, chat, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "pi.cost.total", "pi.duration_ms")
	if !chat.Has("gen_ai.response.time_to_first_chunk") {
		t.Error("chat has no time to first chunk")
	}
	wantUsage(t, tr, recs)
	noContent(t, tr, "Say hello", "Hello from the fake model")

	// The same script run directly writes the same sequence of records.
	want := capture.Types(records(t, direct(t, "text")))
	if got := capture.Types(recs); !slices.Equal(got, want) {
		t.Errorf("record types through pi-otel:\n%v\ndirect:\n%v", got, want)
	}
}

// runBashToolAndReplay: a bash call then an answer is two turns, the tool
// under the first; replaying pi-otel's stdout gives the same tree.
func runBashToolAndReplay(t *testing.T, j *jaegertest.Jaeger) {
	s, r, traces := tracedCapture(t, j, v160, "bash-tool", "e2e-bash-tool")
	tr := one(t, traces)
	tool := only(t, tr, "execute_tool bash")
	wantAttrs(t, tool, map[string]any{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "bash",
		"gen_ai.tool.call.id":   "call_bash_1",
		"gen_ai.tool.type":      "function",
	})
	if !tool.Has("pi.tool.duration_ms") || tool.Status.Code == "error" {
		t.Errorf("tool %+v %v", tool.Status, tool.Attrs)
	}
	if tool.Parent != tr.Named("pi.turn")[0] {
		t.Errorf("tool under %s, want the first turn", tool.Parent.Name)
	}
	for i, turn := range tr.Named("pi.turn") {
		wantAttrs(t, turn, map[string]any{"pi.turn.index": int64(i)})
	}
	wantAttrs(t, root(t, tr), map[string]any{"pi.tool_calls": int64(1), "pi.tool_errors": int64(0), "pi.turns": int64(2), "pi.outcome": "ok"})
	wantUsage(t, tr, records(t, r.stdout))
	noContent(t, tr, "echo hello from bash", "hello from bash")

	// Replay what the live run passed through.
	log := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(log, r.stdout, 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Unix(0, 0) // replayed spans carry the stream's own times
	rr := runPiOtel(t, s.pi, call{args: []string{"replay", log}, env: otlpGRPC(j, "e2e-bash-tool-replay")})
	if rr.code != 0 {
		t.Fatalf("replay exited %d\n%s", rr.code, rr.stderr)
	}
	replayed := one(t, stored(t, j, "e2e-bash-tool-replay", since, rr))
	wantTree(t, v160, "bash-tool", replayed)
	if replayed.ID == tr.ID {
		t.Error("the replay reused the live trace id")
	}
	// The replay's times come from the stream: the root starts at the
	// session header's timestamp, the first chat at its message's.
	recs := records(t, r.stdout)
	header, err := time.Parse(time.RFC3339Nano, fmt.Sprint(recs[0]["timestamp"]))
	if err != nil {
		t.Fatalf("session header time: %v", err)
	}
	if got := root(t, replayed).Start; !got.Equal(header) {
		t.Errorf("replayed root starts at %v, the session header says %v", got, header)
	}
	if got, want := replayed.Named("chat fake-model")[0].Start, messageTimes(recs)[0]; !got.Equal(want) {
		t.Errorf("replayed chat starts at %v, its message says %v", got, want)
	}
}

// messageTimes lists the timestamps of the assistant messages' starts.
func messageTimes(recs []map[string]any) []time.Time {
	var out []time.Time
	for _, r := range recs {
		msg, _ := r["message"].(map[string]any)
		if r["type"] == "message_start" && msg["role"] == "assistant" {
			ms, _ := msg["timestamp"].(float64)
			out = append(out, time.UnixMilli(int64(ms)))
		}
	}
	return out
}

// runParallelTools: four calls in one response, a missing file read and an
// exit 3 among them: four tool spans under the first turn, two in error,
// the run itself fine.
func runParallelTools(t *testing.T, j *jaegertest.Jaeger) {
	_, _, traces := tracedCapture(t, j, v160, "parallel-tools", "e2e-parallel-tools")
	tr := one(t, traces)
	turns := tr.Named("pi.turn")
	if len(turns) != 2 {
		t.Fatalf("%d turns:\n%s", len(turns), tr.Tree())
	}
	status := map[string]string{}
	for _, c := range turns[0].Children {
		if c.Name == "chat fake-model" {
			continue
		}
		if c.Name != "execute_tool "+c.Str("gen_ai.tool.name") {
			t.Errorf("span %q for tool %q", c.Name, c.Str("gen_ai.tool.name"))
		}
		status[c.Str("gen_ai.tool.call.id")] = c.Status.Code
		if c.Status.Code == "error" {
			wantAttrs(t, c, map[string]any{"error.type": "tool_error"})
		}
	}
	want := map[string]string{"call_ok_1": "unset", "call_ok_2": "unset", "call_missing": "error", "call_exit3": "error"}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Errorf("tool statuses %v, want %v\n%s", status, want, tr.Tree())
	}
	if n := len(turns[1].Children); n != 1 {
		t.Errorf("second turn has %d children:\n%s", n, tr.Tree())
	}
	rt := root(t, tr)
	wantAttrs(t, rt, map[string]any{"pi.tool_calls": int64(4), "pi.tool_errors": int64(2), "pi.outcome": "ok"})
	wantAttrs(t, turns[0], map[string]any{"pi.turn.tool_calls": int64(4)})
	if rt.Status.Code == "error" {
		t.Error("failed tools alone failed the run")
	}
}

// runRetry529: one 529 then success is ONE trace: a failed run, the retry,
// the run that worked; the root is fine.
func runRetry529(t *testing.T, j *jaegertest.Jaeger) {
	_, _, traces := tracedCapture(t, j, v160, "retry-529", "e2e-retry-529")
	tr := one(t, traces)
	retry := only(t, tr, "pi.retry")
	wantAttrs(t, retry, map[string]any{"pi.retry.attempt": int64(1), "pi.retry.outcome": "success", "pi.retry.success": true})
	positive(t, retry, "pi.retry.max_attempts")
	wantAttrs(t, tr.Named("chat fake-model")[0], map[string]any{"error.type": "529"})
	runs := tr.Named("pi.agent_run")
	wantAttrs(t, runs[0], map[string]any{"pi.will_retry": true})
	rt := root(t, tr)
	wantAttrs(t, rt, map[string]any{"pi.outcome": "ok", "pi.retries": int64(1), "pi.agent_runs": int64(2), "pi.end_reason": "settled"})
	if rt.Status.Code == "error" {
		t.Errorf("root %+v", rt.Status)
	}
}

// runRetriesExhausted: every attempt fails; the root is in error, closed by
// agent_settled all the same.
func runRetryExhausted(t *testing.T, j *jaegertest.Jaeger) {
	_, _, traces := tracedCapture(t, j, v160, "retry-exhausted", "e2e-retry-exhausted")
	tr := one(t, traces)
	retries := tr.Named("pi.retry")
	wantAttrs(t, retries[0], map[string]any{"pi.retry.outcome": "failed", "pi.retry.attempt": int64(1)})
	wantAttrs(t, retries[1], map[string]any{"pi.retry.outcome": "exhausted", "pi.retry.attempt": int64(2)})
	rt := root(t, tr)
	wantAttrs(t, rt, map[string]any{"pi.end_reason": "settled", "pi.settled": true, "pi.outcome": "error", "pi.agent_runs": int64(3)})
	if rt.Status.Code != "error" || rt.Status.Message == "" {
		t.Errorf("root status %+v", rt.Status)
	}
}

// runOverflow: the second prompt overflows the context; the overflow
// compaction and the retry stay in that prompt's trace.
func runOverflow(t *testing.T, j *jaegertest.Jaeger) {
	_, _, traces := tracedCapture(t, j, v160, "overflow", "e2e-overflow")
	tr := traces[1]
	c := only(t, tr, "pi.compaction")
	wantAttrs(t, c, map[string]any{"pi.compaction.reason": "overflow", "pi.compaction.outcome": "ok"})
	wantAttrs(t, tr.Named("chat fake-model")[0], map[string]any{"error.type": "context_overflow"})
	wantAttrs(t, root(t, tr), map[string]any{"pi.outcome": "ok", "pi.compactions": int64(1), "pi.agent_runs": int64(2)})
	if root(t, traces[0]).Str("gen_ai.conversation.id") != root(t, tr).Str("gen_ai.conversation.id") {
		t.Error("the two prompts of one session have different conversation ids")
	}
}

// runThresholdCompaction: the first prompt compacts after agent_end (under
// the root), the second between two turns (under the run).
func runThresholdCompaction(t *testing.T, j *jaegertest.Jaeger) {
	_, _, traces := tracedCapture(t, j, v160, "threshold-compaction", "e2e-threshold")
	for i, tr := range traces {
		c := only(t, tr, "pi.compaction")
		wantAttrs(t, c, map[string]any{"pi.compaction.reason": "threshold", "pi.compaction.outcome": "ok", "pi.compaction.aborted": false})
		positive(t, c, "pi.compaction.tokens_before")
		wantAttrs(t, root(t, tr), map[string]any{"pi.compactions": int64(1), "pi.outcome": "ok"})
		if i == 0 {
			// Pi reported 7000 prompt tokens and 200 completion tokens.
			wantAttrs(t, c, map[string]any{"pi.compaction.tokens_before": int64(7200)})
		}
	}
}

// runBigOutput: U+2028, U+2029 and 2 MB of tool output pass through byte
// for byte. Pi runs inside `pi | tee RAW`, so RAW is what Pi wrote and
// pi-otel's stdout must equal it.
func runBigOutput(t *testing.T, j *jaegertest.Jaeger) {
	s := prepare(t, "big-output")
	since := time.Now().Add(-time.Second)
	r := runTeed(t, s, otlpGRPC(j, "e2e-big-output"))
	if !strings.Contains(string(r.stdout), "\u2028") || !strings.Contains(string(r.stdout), "\u2029") {
		t.Error("no raw U+2028/U+2029 in the stream")
	}
	tr := one(t, stored(t, j, "e2e-big-output", since, r))
	wantTree(t, v160, "big-output", tr)
	wantAttrs(t, root(t, tr), map[string]any{"pi.outcome": "ok", "pi.end_reason": "settled"})
	positive(t, only(t, tr, "execute_tool bash"), "pi.tool.updates")
}

// runSigterm: SIGTERM to pi-otel while Pi's bash tool sleeps. Pi gets it
// and exits 143, so does pi-otel, and the trace is closed: root in error
// with end_reason signal, the open tool span ended as unfinished.
func runSigterm(t *testing.T, j *jaegertest.Jaeger) {
	s := prepare(t, "sigterm-mid-tool")
	since := time.Now().Add(-time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := make(chan error, 1)
	r := runPiOtel(t, s.pi, call{
		args: append([]string{"run", "--"}, s.piArgs()...),
		env:  otlpGRPC(j, "e2e-sigterm"),
		onRecord: func(rec map[string]any, p *os.Process) {
			if rec["type"] != "tool_execution_start" {
				return
			}
			go func() {
				// Signal once the tool's sleep runs, so it lands mid-tool.
				_, err := waitDescendant(ctx, p.Pid, "sleep", "30")
				if err == nil {
					err = p.Signal(syscall.SIGTERM)
				}
				sent <- err
			}()
		},
	})
	cancel()
	if err := <-sent; err != nil {
		t.Fatalf("signalling pi-otel mid-tool: %v", err)
	}
	if r.code != 143 {
		t.Fatalf("pi-otel exited %d, want 143 (Pi's exit on SIGTERM)\n%s", r.code, r.stderr)
	}
	s.check(t, r)
	tr := one(t, stored(t, j, "e2e-sigterm", since, r))
	wantTree(t, v160, "sigterm-mid-tool", tr)
	rt := root(t, tr)
	wantAttrs(t, rt, map[string]any{
		"pi.end_reason": "signal", "pi.signal": "SIGTERM", "pi.exit_code": int64(143),
		"pi.settled": false, "pi.outcome": "unsettled",
	})
	for _, name := range []string{"execute_tool bash", "pi.turn", "pi.agent_run"} {
		sp := only(t, tr, name)
		wantAttrs(t, sp, map[string]any{"pi.unfinished": true})
		if d := rt.End.Sub(sp.End); d < 0 || d >= time.Microsecond { // Jaeger keeps microseconds
			t.Errorf("%s ended at %v, the root at %v", name, sp.End, rt.End)
		}
	}
}

// runTraceparent: the bash tool prints the TRACEPARENT Pi's children see.
// It names the root of the trace pi-otel exported (its ids are reserved
// before Pi starts). With the caller's TRACEPARENT set, that root is the
// caller's child, in the caller's trace.
func runTraceparent(t *testing.T, j *jaegertest.Jaeger, caller bool) {
	s := prepareJSON(t, "traceparent", "Show the trace context",
		fakemodel.Tools(fakemodel.Bash("call_env", "printenv TRACEPARENT")),
		fakemodel.Text("Printed.", 1),
	)
	service := "e2e-traceparent-grpc"
	env := otlpGRPC(j, service)
	var callerTrace, callerSpan string
	if caller {
		service = "e2e-traceparent-http"
		env = otlpHTTP(j, service)
		callerTrace, callerSpan = randomHex(t, 16), randomHex(t, 8)
		env = append(env, "TRACEPARENT=00-"+callerTrace+"-"+callerSpan+"-01")
	}
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, s.pi, call{args: append([]string{"run", "--"}, s.piArgs()...), env: env})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	wantProto := "grpc"
	if caller {
		wantProto = "http"
	}
	if !strings.Contains(r.summary.Dest, wantProto) {
		t.Errorf("summary %q does not name %s", r.summary.Line, wantProto)
	}
	tr := one(t, stored(t, j, service, since, r))
	wantTree(t, v160, "bash-tool", tr) // a tool, then an answer
	rt := root(t, tr)
	if caller {
		if tr.ID != callerTrace || rt.ParentID != callerSpan {
			t.Errorf("root in trace %s under %s, want trace %s under %s", tr.ID, rt.ParentID, callerTrace, callerSpan)
		}
	} else if rt.ParentID != "" {
		t.Errorf("root has parent %s without a caller's TRACEPARENT", rt.ParentID)
	}
	seen := toolText(t, records(t, r.stdout), "call_env")
	m := regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01\n$`).FindStringSubmatch(seen)
	if m == nil {
		t.Fatalf("the bash tool saw TRACEPARENT %q", seen)
	}
	// Each bash call sees its own execute_tool span (docs/configuration.md,
	// Propagation).
	tool := only(t, tr, "execute_tool bash")
	if m[1] != tr.ID || m[2] != tool.SpanID {
		t.Errorf("Pi's child saw trace %s span %s; the call's execute_tool span is trace %s span %s", m[1], m[2], tr.ID, tool.SpanID)
	}
}

// runOlderPi: the text scenario on an older Pi gives a closed, correct tree.
// Pi 0.73 never settles, so the root ends on the inferred settle, and that
// is not an error.
func runOlderPi(t *testing.T, j *jaegertest.Jaeger, piVar, version, endReason string) {
	_, r, traces := tracedCapture(t, j, version, "text", "e2e-"+strings.ToLower(piVar), pitest.WithPi(pitest.Lookup(t, piVar)))
	tr := one(t, traces)
	rt := root(t, tr)
	wantAttrs(t, rt, map[string]any{"pi.end_reason": endReason, "pi.settled": endReason == "settled", "pi.agent_runs": int64(1)})
	if rt.Status.Code == "error" {
		t.Errorf("root status %+v", rt.Status)
	}
	wantUsage(t, tr, records(t, r.stdout))
}

// runConsoleDefault: with no OTLP endpoint, the trace is a tree on stderr
// and stdout is exactly what Pi wrote (Pi runs inside `pi | tee RAW`).
func runConsoleDefault(t *testing.T) {
	s := prepare(t, "bash-tool")
	r := runTeed(t, s, nil)
	if r.summary.Dest != "console (stderr)" || r.summary.Spans != 7 || r.summary.Traces != 1 {
		t.Errorf("summary %q", r.summary.Line)
	}
	tree := spantree.Names(spantree.Read(t, spantree.CaptureTree(v160, "bash-tool")))
	if got := consoleTree(t, r.stderr, r.summary.TraceID); got != tree {
		t.Errorf("tree on stderr:\n%s\nwant:\n%s\nstderr:\n%s", got, tree, r.stderr)
	}
}

// runTeed runs the scenario under `pi-otel run` with env and Pi inside
// `pi | tee RAW`, checks that pi-otel exits 0 and that its stdout is
// exactly what Pi wrote, and returns the result.
func runTeed(t *testing.T, s *setup, env []string) *result {
	t.Helper()
	raw := filepath.Join(t.TempDir(), "pi.stdout")
	r := runPiOtel(t, s.pi, call{args: append([]string{"run", "--"}, teed(s.piArgs())...), env: append(env, "RAW="+raw)})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s.check(t, r)
	want, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	proc.SameBytes(t, "pi-otel's stdout against Pi's", r.stdout, want)
	return r
}

// teed wraps a command in `bash -c 'CMD | tee "$RAW"'`, keeping its exit
// status, so $RAW receives exactly what CMD wrote to stdout.
func teed(argv []string) []string {
	return append([]string{"bash", "-c", `set -o pipefail; "$@" | tee "$RAW"`, "bash"}, argv...)
}

// consoleTree reads back the console exporter's tree for traceID from
// stderr as indented span names, as shape renders them.
func consoleTree(t *testing.T, stderr []byte, traceID string) string {
	t.Helper()
	lines := strings.Split(string(stderr), "\n")
	start := slices.Index(lines, "trace "+traceID)
	if start < 0 {
		t.Fatalf("no tree for trace %s on stderr:\n%s", traceID, stderr)
	}
	var b strings.Builder
	for _, l := range lines[start+1:] {
		if l == "" || strings.HasPrefix(l, "pi-otel: ") || strings.HasPrefix(l, "trace ") {
			break
		}
		// Each level is three runes of box drawing or spaces.
		rs := []rune(l)
		i := 0
		for i < len(rs) && strings.ContainsRune("│├└─ ", rs[i]) {
			i++
		}
		name, _, _ := strings.Cut(string(rs[i:]), "  ")
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", i/3), name)
	}
	return b.String()
}

func one(t *testing.T, traces []*jaegertest.Trace) *jaegertest.Trace {
	t.Helper()
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	return traces[0]
}

// sessionID is the id in Pi's session header.
func sessionID(t *testing.T, recs []map[string]any) string {
	t.Helper()
	for _, r := range recs {
		if r["type"] == "session" {
			if id, _ := r["id"].(string); id != "" {
				return id
			}
		}
	}
	t.Fatal("no session header")
	return ""
}

// toolText is the text result of the tool call id.
func toolText(t *testing.T, recs []map[string]any, id string) string {
	t.Helper()
	for _, r := range recs {
		if r["type"] != "tool_execution_end" || r["toolCallId"] != id {
			continue
		}
		res, _ := r["result"].(map[string]any)
		parts, _ := res["content"].([]any)
		var b strings.Builder
		for _, p := range parts {
			if m, _ := p.(map[string]any); m["type"] == "text" {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	t.Fatalf("no tool_execution_end for %s", id)
	return ""
}

// usage is what Pi reported for one assistant message.
type usage struct {
	in, out, cacheRead, cacheWrite int64
	cost                           float64
}

// assistantUsage lists the usage of each assistant message_end, in order.
func assistantUsage(recs []map[string]any) []usage {
	var out []usage
	for _, r := range recs {
		msg, _ := r["message"].(map[string]any)
		if r["type"] != "message_end" || msg["role"] != "assistant" {
			continue
		}
		u, _ := msg["usage"].(map[string]any)
		num := func(k string) int64 { f, _ := u[k].(float64); return int64(f) }
		c, _ := u["cost"].(map[string]any)
		total, _ := c["total"].(float64)
		out = append(out, usage{num("input"), num("output"), num("cacheRead"), num("cacheWrite"), total})
	}
	return out
}

// wantUsage checks each chat span against the usage Pi reported for its
// message, and the root against their sum (one settled run: every message).
func wantUsage(t *testing.T, tr *jaegertest.Trace, recs []map[string]any) {
	t.Helper()
	us := assistantUsage(recs)
	chats := tr.Named("chat fake-model")
	if len(chats) != len(us) {
		t.Fatalf("%d chat spans for %d assistant messages", len(chats), len(us))
	}
	var sum usage
	for i, u := range us {
		tokens(t, chats[i], u)
		sum.in += u.in
		sum.out += u.out
		sum.cacheRead += u.cacheRead
		sum.cacheWrite += u.cacheWrite
		sum.cost += u.cost
	}
	tokens(t, root(t, tr), sum)
	if sum.cost <= 0 {
		t.Errorf("Pi reported no cost: %+v", us)
	}
}

func tokens(t *testing.T, s *jaegertest.Span, u usage) {
	t.Helper()
	wantAttrs(t, s, map[string]any{
		"gen_ai.usage.input_tokens":                u.in + u.cacheRead + u.cacheWrite,
		"gen_ai.usage.output_tokens":               u.out,
		"gen_ai.usage.cache_read.input_tokens":     u.cacheRead,
		"gen_ai.usage.cache_creation.input_tokens": u.cacheWrite,
	})
	if c, _ := s.Float("pi.cost.total"); math.Abs(c-u.cost) > 1e-12 {
		t.Errorf("%s: pi.cost.total = %v, want %v", s.Name, c, u.cost)
	}
}

// noContent checks that no attribute, event or status of the trace holds
// any of texts: content stays out unless the user opts in.
func noContent(t *testing.T, tr *jaegertest.Trace, texts ...string) {
	t.Helper()
	for _, s := range tr.Spans {
		blobs := []string{s.Status.Message, fmt.Sprint(s.Attrs)}
		for _, e := range s.Events {
			blobs = append(blobs, fmt.Sprint(e.Attrs))
		}
		for _, b := range blobs {
			for _, text := range texts {
				if strings.Contains(b, text) {
					t.Errorf("%s leaks %q", s.Name, text)
				}
			}
		}
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// waitDescendant polls /proc until a descendant of pid runs argv, and
// returns its pid.
func waitDescendant(ctx context.Context, pid int, argv ...string) (int, error) {
	want := strings.Join(argv, "\x00") + "\x00"
	for {
		for _, p := range descendants(pid) {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && string(b) == want {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no descendant of %d runs %q: %w", pid, argv, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
