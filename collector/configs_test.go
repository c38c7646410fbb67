package collector_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

func loadConfig(t *testing.T, rel string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

// dig walks m along keys.
func dig(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("no map at %v (stopped at %q)", keys, k)
		}
		m = next
	}
	return m
}

// TestAgentDNSIsAgentWithDNS keeps collector/agent-dns.yaml equal to agent.yaml apart from the
// resolver, which is the only thing it exists to change.
func TestAgentDNSIsAgentWithDNS(t *testing.T) {
	static, dns := loadConfig(t, "collector/agent.yaml"), loadConfig(t, "collector/agent-dns.yaml")
	lbs := 0
	for name := range dig(t, static, "exporters") {
		sr := dig(t, static, "exporters", name, "resolver")
		dr := dig(t, dns, "exporters", name, "resolver")
		if _, ok := sr["static"]; !ok {
			t.Errorf("agent.yaml: %s does not use the static resolver", name)
		}
		d, ok := dr["dns"].(map[string]any)
		if !ok || d["hostname"] == nil {
			t.Errorf("agent-dns.yaml: %s has no dns resolver with a hostname: %v", name, dr)
		}
		delete(sr, "static")
		delete(dr, "dns")
		lbs++
	}
	if lbs == 0 {
		t.Fatal("agent.yaml has no exporters")
	}
	if !reflect.DeepEqual(static, dns) {
		t.Errorf("agent-dns.yaml differs from agent.yaml beyond the resolver:\nagent.yaml:     %v\nagent-dns.yaml: %v", static, dns)
	}
}

// TestAgentRoutesByTraceID pins the properties the scale-out rests on: traces and logs routed by
// trace id, metrics by resource, every load_balancing queue persistent, and no per-gateway
// in-memory queue that would acknowledge a batch before its gateway has it.
func TestAgentRoutesByTraceID(t *testing.T) {
	for _, file := range []string{"collector/agent.yaml", "collector/agent-dns.yaml"} {
		cfg := loadConfig(t, file)
		pipes := dig(t, cfg, "service", "pipelines")
		for pipe, p := range pipes {
			exps, _ := p.(map[string]any)["exporters"].([]any)
			if len(exps) != 1 {
				t.Errorf("%s: pipeline %s exports to %v, want one load_balancing exporter", file, pipe, exps)
				continue
			}
			name := exps[0].(string)
			exp := dig(t, cfg, "exporters", name)
			want := "traceID"
			if pipe == "metrics" {
				want = "resource"
			}
			if exp["routing_key"] != want {
				t.Errorf("%s: %s (pipeline %s) routes by %v, want %s", file, name, pipe, exp["routing_key"], want)
			}
			q := dig(t, cfg, "exporters", name, "sending_queue")
			if q["enabled"] != true || q["storage"] != "file_storage/queue" {
				t.Errorf("%s: %s queue %v is not the persistent one", file, name, q)
			}
			if sub := dig(t, cfg, "exporters", name, "protocol", "otlp", "sending_queue"); sub["enabled"] != false {
				t.Errorf("%s: %s has a per-gateway queue %v", file, name, sub)
			}
			for _, proc := range p.(map[string]any)["processors"].([]any) {
				if proc == "batch" {
					t.Errorf("%s: pipeline %s batches in a processor, whose buffer a crash loses", file, pipe)
				}
			}
		}
	}
}

// TestKubernetesExampleMatchesAgentDNS: the DNS name agent-dns.yaml resolves by default is the
// example's headless Service, on the port the gateway pods listen on.
func TestKubernetesExampleMatchesAgentDNS(t *testing.T) {
	raw, err := os.ReadFile(repo.Path("collector/kubernetes/gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var svc struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			ClusterIP string `yaml:"clusterIP"`
			Ports     []struct {
				Port       int `yaml:"port"`
				TargetPort int `yaml:"targetPort"`
			} `yaml:"ports"`
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for dec.Decode(&svc) == nil && svc.Kind != "Service" {
	}
	if svc.Kind != "Service" {
		t.Fatal("collector/kubernetes/gateway.yaml has no Service")
	}
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("the gateway Service has clusterIP %q: only a headless one resolves to every pod", svc.Spec.ClusterIP)
	}
	text, err := os.ReadFile(repo.Path("collector/agent-dns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	host := svc.Metadata.Name + "." + svc.Metadata.Namespace + ".svc.cluster.local"
	if !strings.Contains(string(text), "${env:PI_OTEL_GATEWAY_DNS:-"+host+"}") {
		t.Errorf("agent-dns.yaml does not resolve %s by default", host)
	}
	d := dig(t, loadConfig(t, "collector/agent-dns.yaml"), "exporters", "load_balancing/traces", "resolver", "dns")
	port := fmt.Sprint(d["port"])
	if len(svc.Spec.Ports) != 1 || fmt.Sprint(svc.Spec.Ports[0].Port) != port || fmt.Sprint(svc.Spec.Ports[0].TargetPort) != port {
		t.Errorf("Service ports %+v, the agent sends to port %s", svc.Spec.Ports, port)
	}
}
