//go:build realstack

package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/piotel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// The real workload: the built pi-otel binary replaying every real Pi capture, each replay its
// own short process, and a real `pi --mode rpc` session through `pi-otel rpc`. What the
// captures and the session transcript say (records, cost) is computed here independently of
// pi-otel, so the numbers Prometheus ends up with can be checked against them.

// hangGuard bounds one pi-otel process so a hang fails the test instead of the package timing
// out. It is not a performance assertion.
const hangGuard = 2 * time.Minute

// rpcInstance is the service.instance.id the RPC session names itself (the user-chosen form of
// the per-process identity), so its series can be told from the replays' random ones.
const rpcInstance = "operator-test-rpc-session"

// realCapture is one captured `pi --mode json` stream and what it holds.
type realCapture struct {
	path    string
	records int     // non-empty LF-terminated lines: what pi-otel reads as records
	cost    float64 // what Pi charged: assistant message_end and compaction_end costs
}

// captureFiles reads the real Pi 1.6.0 json-mode captures.
func captureFiles(t *testing.T) []realCapture {
	t.Helper()
	var out []realCapture
	for _, p := range piotel.JSONCaptures(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		recs := splitRecords(b)
		out = append(out, realCapture{path: p, records: len(recs), cost: piCost(recs)})
	}
	return out
}

// splitRecords splits Pi's output on LF (its only record separator) and drops empty lines.
func splitRecords(b []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// piCost adds up what Pi says it spent: usage.cost.total of every assistant message_end and of
// every compaction_end result (a compaction's summary is a model call too), and the cost of
// every child run a subagent tool reports in its result (details.results[].usage.cost).
func piCost(recs [][]byte) float64 {
	var total float64
	for _, raw := range recs {
		var r struct {
			Type    string `json:"type"`
			Message *struct {
				Role  string `json:"role"`
				Usage *usage `json:"usage"`
			} `json:"message"`
			Result *struct {
				Usage   *usage `json:"usage"`
				Details *struct {
					Results []struct {
						Usage *struct {
							Cost float64 `json:"cost"`
						} `json:"usage"`
					} `json:"results"`
				} `json:"details"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			// A line that is not a JSON object carries no cost.
			continue
		}
		switch {
		case r.Type == "message_end" && r.Message != nil && r.Message.Role == "assistant" && r.Message.Usage != nil:
			total += r.Message.Usage.Cost.Total
		case r.Type == "compaction_end" && r.Result != nil && r.Result.Usage != nil:
			total += r.Result.Usage.Cost.Total
		case r.Type == "tool_execution_end" && r.Result != nil && r.Result.Details != nil:
			for _, run := range r.Result.Details.Results {
				if run.Usage != nil {
					total += run.Usage.Cost
				}
			}
		}
	}
	return total
}

type usage struct {
	Cost struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// parseSummary reads the last summary line of stderr and reports export trouble.
func parseSummary(t *testing.T, what string, stderr []byte) summaryline.Summary {
	t.Helper()
	s, ok := summaryline.Parse(stderr)
	if !ok {
		t.Fatalf("%s: no summary line on pi-otel's stderr:\n%s", what, stderr)
	}
	if s.Trouble() {
		t.Errorf("%s: export trouble: %s", what, s.Line)
	}
	return s
}

// semconvMode is one of the GenAI conventions modes pi-otel sends (docs/span-model.md,
// Conventions per mode). The dashboards and rules must work in each.
type semconvMode struct {
	name string
	env  []string // added to every pi-otel process's environment
	// own and foreign are the Prometheus name prefixes of the metrics only this mode, or only
	// the other one, sends.
	own, foreign []string
	firstChunk   string // the time-to-first-chunk sum series
	perChunk     string // the time-per-output-chunk count series
}

var (
	v141Only     = []string{"gen_ai_client_token_usage", "gen_ai_client_operation_"}
	latestOnly   = []string{"gen_ai_client_inference_", "gen_ai_invoke_agent_", "gen_ai_execute_tool_"}
	semconvModes = []semconvMode{
		{name: "v1.41", own: v141Only, foreign: latestOnly,
			firstChunk: "gen_ai_client_operation_time_to_first_chunk_seconds_sum",
			perChunk:   "gen_ai_client_operation_time_per_output_chunk_seconds_count"},
		{name: "latest", env: []string{"OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"}, own: latestOnly, foreign: v141Only,
			firstChunk: "gen_ai_client_inference_time_to_first_chunk_seconds_sum",
			perChunk:   "gen_ai_client_inference_time_per_output_chunk_seconds_count"},
	}
)

// isForeign reports whether metric is one only the other mode's processes send.
func (m semconvMode) isForeign(metric string) bool {
	for _, p := range m.foreign {
		if strings.HasPrefix(metric, p) {
			return true
		}
	}
	return false
}

// replay runs `pi-otel replay` of file as a user would, exporting to endpoint in mode, and
// returns its summary. Errors are reported with t.Errorf so replays can run concurrently.
func replay(t *testing.T, bin, file, endpoint, protocol string, mode semconvMode) (summaryline.Summary, bool) {
	r, err := piotel.Replay(bin, file, endpoint, protocol, mode.env...)
	what := "replay " + filepath.Base(file)
	if err != nil {
		t.Errorf("%s over %s: %v", what, protocol, err)
		return summaryline.Summary{}, false
	}
	if bytes.Contains(r.Stderr, []byte("panic:")) {
		t.Errorf("%s panicked:\n%s", what, r.Stderr)
	}
	if r.Trouble != "" {
		t.Errorf("%s: export trouble: %s", what, r.Trouble)
	}
	return r.Summary, true
}

// replayed is the outcome of replaying every capture.
type replayed struct {
	processes int
	records   int
	cost      float64
	spans     int
	traceIDs  []string // of the replays that made one trace
}

// replayAll replays every capture concurrently, each in its own pi-otel process, alternating
// OTLP/gRPC and OTLP/HTTP into the agent.
func replayAll(t *testing.T, bin string, stack *collectortest.Stack, caps []realCapture, mode semconvMode) replayed {
	t.Helper()
	var (
		mu  sync.Mutex
		out replayed
		wg  sync.WaitGroup
	)
	for i, c := range caps {
		endpoint, protocol := "http://"+stack.AgentOTLP, "grpc"
		if i%2 == 1 {
			endpoint, protocol = "http://"+stack.AgentOTLPHTTP, "http/protobuf"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, ok := replay(t, bin, c.path, endpoint, protocol, mode)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			out.processes++
			out.records += c.records
			out.cost += c.cost
			out.spans += s.Spans
			if s.TraceID != "" {
				out.traceIDs = append(out.traceIDs, s.TraceID)
			}
		}()
	}
	wg.Wait()
	if out.processes != len(caps) {
		t.FailNow()
	}
	return out
}

// rpcSession is the outcome of the real RPC session.
type rpcSession struct {
	result *rpctest.Result
	cost   float64 // from Pi's records in the transcript
}

// runRPCSession plays the rpctest "extension-ui" scenario — the test extension's confirm,
// select and timed input dialogs around real bash tool calls, against the fake model — with the
// real `pi --mode rpc` behind the real `pi-otel rpc`, exporting spans and metrics to endpoint.
// Its metrics are exported every second, as a long session's would be, so its series grow
// while it runs. It may run on any goroutine: it reports failure as an error.
func runRPCSession(dir, bin, endpoint string, mode semconvMode) (*rpcSession, error) {
	s, ok := rpctest.ByName("extension-ui")
	if !ok {
		return nil, fmt.Errorf("rpctest has no extension-ui scenario")
	}
	peer := func(env *pitest.Env, piArgs []string) *exec.Cmd {
		// A live run in a git work tree, for a team: its cost carries the labels the "who
		// spent what" panels and the budget rules group by. A git that fails leaves them out,
		// which the label check then reports.
		for _, g := range [][]string{{"init", "-q", "-b", "main"}, {"remote", "add", "origin", "https://git.example.com/acme/" + rpcRepository + ".git"}} {
			_ = exec.Command("git", append([]string{"-C", env.WorkDir}, g...)...).Run()
		}
		args := append([]string{"rpc", "--traces-exporter", "otlp", "--metrics-exporter", "otlp",
			"--metrics-interval", "1s", "--team", rpcTeam, "--", env.Pi}, piArgs...)
		cmd := env.Wrap(context.Background(), bin, args...)
		cmd.Env = append(append(piotel.ExportEnv(cmd.Env, endpoint, "grpc"), mode.env...), "OTEL_RESOURCE_ATTRIBUTES=service.instance.id="+rpcInstance)
		return cmd
	}
	res, err := s.Run(dir, peer)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, l := range res.Lines {
		if l.Dir == rpctest.Out {
			out = append(append(out, l.Raw...), '\n')
		}
	}
	return &rpcSession{result: res, cost: piCost(splitRecords(out))}, nil
}

// The team and repository of the RPC session, the live run among the workload.
const (
	rpcTeam       = "operators"
	rpcRepository = "widget"
)

// labelsNoCaptureHas are labels that the dashboards and rules group by but that no run of the
// workload carries, with why; the grouping check accepts them.
var labelsNoCaptureHas = map[string]string{
	"pi_skill": "no capture loads a skill; test/e2e's TestWhoSpentWhat traces one with the real Pi",
}

// syntheticOnly are selectors no real scenario can satisfy, with why. They get data from
// sendSynthetic below and from nothing else; the test checks that real data indeed leaves them
// empty, so an entry is dropped as soon as a capture covers it.
var syntheticOnly = map[string]string{
	// PiCompactionFailing: none of the captured Pi 1.6.0 runs has a compaction that failed
	// (summary call error, outcome "error") or was cut off (outcome "unfinished"); every real
	// compaction in testdata ends "ok".
	`traces_span_metrics_calls_total{span_name="pi.compaction", pi_compaction_outcome=~"error|unfinished"}`: "no capture has a failed or unfinished compaction",
}

// syntheticService is the service.name of the synthetic supplement, so its series are never
// mistaken for pi-otel's.
const syntheticService = "operator-test-synthetic"

// sendSynthetic exports, straight over OTLP and without pi-otel's metrics, the one span shape
// syntheticOnly needs: a failed overflow compaction. It reaches only the gateway's spanmetrics.
func sendSynthetic(t *testing.T, endpoint string) {
	t.Helper()
	ctx := context.Background()
	tp := collectortest.Sender(t, endpoint, syntheticService)
	_, s := tp.Tracer("operator-test").Start(ctx, "pi.compaction")
	s.SetAttributes(attribute.String("pi.compaction.reason", "overflow"), attribute.String("pi.compaction.outcome", "error"))
	s.SetStatus(codes.Error, "synthetic: the summary call failed")
	s.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
