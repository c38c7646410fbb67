package collectortest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// GatewayArgs are the command-line arguments the gateway runs with, in tests and in
// docker-compose.yml (checked there).
var GatewayArgs = []string{"--feature-gates=connector.spanmetrics.excludeResourceMetrics"}

// Stack is agent → gateways → two trace backends, all real processes on loopback: Jaeger and a
// second Jaeger standing in for Tempo (Tempo is not available here), so both exporters are live.
// The Gateway* fields describe the first gateway; Gateways lists them all.
type Stack struct {
	AgentOTLP        string // OTLP/gRPC into the agent
	AgentOTLPHTTP    string
	AgentTelemetry   string // the agent's own metrics, host:port
	AgentQueueDir    string // the agent's persistent sending queue
	GatewayOTLP      string // OTLP/gRPC into the first gateway
	GatewayOTLPHTTP  string
	GatewayMetrics   string // the first gateway's prometheus exporter, host:port
	GatewayTelemetry string // the first gateway's own metrics, host:port
	Jaeger, Tempo    *jaegertest.Jaeger
	Agent, Gateway   *otelcol.Process
	Gateways         []*Gateway
}

// Gateway is one running gateway and its addresses.
type Gateway struct {
	OTLP, OTLPHTTP string
	Metrics        string // prometheus exporter, host:port
	Telemetry      string // own metrics, host:port
	Jaeger, Tempo  *jaegertest.Jaeger
	Proc           *otelcol.Process
}

// StackOptions tunes the stack for a test.
type StackOptions struct {
	SamplePercentage string // baseline probabilistic sampling, "0" to keep only interesting traces
	DecisionWait     string // tail sampling decision_wait
	SpanmetricsFlush string // spanmetrics flush interval
	NoAgent          bool   // send straight to the gateway
	Gateways         int    // how many gateways the agent routes to (default 1)
	// BackendPerGateway gives each gateway its own Jaeger and Tempo stand-in, so a test can tell
	// which gateway exported what; Stack.Jaeger and Stack.Tempo are then the first gateway's.
	BackendPerGateway bool
	// GatewayOverlays are config files merged over collector/gateway.yaml; GatewayEnv is called
	// with each gateway's index for variables they read.
	GatewayOverlays []string
	GatewayEnv      func(i int) map[string]string
	// AgentEnv adds or overrides agent variables (e.g. PI_OTEL_AGENT_GATEWAY_RETRY).
	AgentEnv map[string]string
	// AgentQueueDir is the agent's queue directory; a fresh temporary one when empty.
	AgentQueueDir string
}

// StartStack starts the backends, the gateways and (unless NoAgent) the agent, from the shipped
// config files.
func StartStack(t testing.TB, o StackOptions) *Stack {
	t.Helper()
	if o.SamplePercentage == "" {
		o.SamplePercentage = "0"
	}
	if o.DecisionWait == "" {
		o.DecisionWait = "1s"
	}
	if o.SpanmetricsFlush == "" {
		o.SpanmetricsFlush = "1s"
	}
	if o.Gateways == 0 {
		o.Gateways = 1
	}
	s := &Stack{}
	var shared [2]*jaegertest.Jaeger
	for i := range o.Gateways {
		g := &Gateway{}
		if i == 0 || o.BackendPerGateway {
			shared = [2]*jaegertest.Jaeger{
				jaegertest.Start(t, jaegertest.WithName(fmt.Sprintf("jaeger-%d", i+1))),
				jaegertest.Start(t, jaegertest.WithName(fmt.Sprintf("tempo-standin-%d", i+1))),
			}
		}
		g.Jaeger, g.Tempo = shared[0], shared[1]
		name := "gateway"
		if o.Gateways > 1 {
			name = fmt.Sprintf("gateway-%d", i+1)
		}
		g.Proc = otelcol.StartFresh(t, func() otelcol.Options {
			g.OTLP, g.OTLPHTTP = freeport.Addr(t), freeport.Addr(t)
			g.Metrics, g.Telemetry = freeport.Addr(t), freeport.Addr(t)
			health := freeport.Addr(t)
			env := map[string]string{
				"PI_OTEL_GATEWAY_HEALTH":         health,
				"PI_OTEL_GATEWAY_OTLP_GRPC":      g.OTLP,
				"PI_OTEL_GATEWAY_OTLP_HTTP":      g.OTLPHTTP,
				"PI_OTEL_GATEWAY_PROMETHEUS":     g.Metrics,
				"PI_OTEL_GATEWAY_TELEMETRY_HOST": "127.0.0.1",
				"PI_OTEL_GATEWAY_TELEMETRY_PORT": freeport.Port(g.Telemetry),
				"PI_OTEL_GATEWAY_BATCH_TIMEOUT":  "200ms",
				"PI_OTEL_JAEGER_ENDPOINT":        g.Jaeger.OTLPGRPC,
				"PI_OTEL_TEMPO_ENDPOINT":         g.Tempo.OTLPGRPC,
				"PI_OTEL_SAMPLE_PERCENTAGE":      o.SamplePercentage,
				"PI_OTEL_TAIL_DECISION_WAIT":     o.DecisionWait,
				"PI_OTEL_SPANMETRICS_FLUSH":      o.SpanmetricsFlush,
			}
			if o.GatewayEnv != nil {
				for k, v := range o.GatewayEnv(i) {
					env[k] = v
				}
			}
			return otelcol.Options{
				Name:     name,
				Binary:   Binary(t),
				Config:   repo.Path("collector/gateway.yaml"),
				Overlays: o.GatewayOverlays,
				Health:   health,
				Args:     GatewayArgs,
				Env:      env,
			}
		})
		s.Gateways = append(s.Gateways, g)
	}
	g0 := s.Gateways[0]
	s.GatewayOTLP, s.GatewayOTLPHTTP, s.GatewayMetrics, s.GatewayTelemetry = g0.OTLP, g0.OTLPHTTP, g0.Metrics, g0.Telemetry
	s.Jaeger, s.Tempo, s.Gateway = g0.Jaeger, g0.Tempo, g0.Proc
	if o.NoAgent {
		return s
	}
	s.AgentQueueDir = o.AgentQueueDir
	if s.AgentQueueDir == "" {
		s.AgentQueueDir = t.TempDir()
	}
	s.Agent = otelcol.StartFresh(t, func() otelcol.Options {
		s.AgentOTLP, s.AgentOTLPHTTP, s.AgentTelemetry = freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
		health := freeport.Addr(t)
		env := map[string]string{
			"PI_OTEL_AGENT_HEALTH":         health,
			"PI_OTEL_AGENT_OTLP_GRPC":      s.AgentOTLP,
			"PI_OTEL_AGENT_OTLP_HTTP":      s.AgentOTLPHTTP,
			"PI_OTEL_AGENT_TELEMETRY_HOST": "127.0.0.1",
			"PI_OTEL_AGENT_TELEMETRY_PORT": freeport.Port(s.AgentTelemetry),
			"PI_OTEL_AGENT_BATCH_TIMEOUT":  "200ms",
			"PI_OTEL_AGENT_QUEUE_DIR":      s.AgentQueueDir,
			"PI_OTEL_GATEWAYS":             s.GatewayList(),
		}
		for k, v := range o.AgentEnv {
			env[k] = v
		}
		return otelcol.Options{
			Name:   "agent",
			Binary: Binary(t),
			Config: repo.Path("collector/agent.yaml"),
			Health: health,
			Env:    env,
		}
	})
	return s
}

// GatewayList is the gateways' OTLP/gRPC addresses as the YAML list the agent's static resolver
// reads from PI_OTEL_GATEWAYS.
func (s *Stack) GatewayList() string {
	var addrs []string
	for _, g := range s.Gateways {
		addrs = append(addrs, g.OTLP)
	}
	return "[" + strings.Join(addrs, ", ") + "]"
}
