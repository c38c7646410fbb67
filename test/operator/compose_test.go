//go:build realstack

package operator_test

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// No docker engine runs here, so docker-compose.yml is checked against the repository: mounts,
// image pins, ports, and every address one file gives for another service.

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     any               `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   []string          `yaml:"depends_on"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func loadYAML(t *testing.T, rel string, out any) {
	t.Helper()
	raw, err := os.ReadFile(collectortest.RepoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	loadYAML(t, "docker-compose.yml", &c)
	return c
}

func commandArgs(t *testing.T, cmd any) []string {
	t.Helper()
	switch c := cmd.(type) {
	case nil:
		return nil
	case string:
		return strings.Fields(c)
	case []any:
		var out []string
		for _, a := range c {
			out = append(out, a.(string))
		}
		return out
	}
	t.Fatalf("unexpected command %T", cmd)
	return nil
}

// mounts maps container path → host path (relative to the repo) for bind mounts.
func mounts(t *testing.T, vols []string, named map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range vols {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Errorf("volume %q has no target", v)
			continue
		}
		src, dst := parts[0], parts[1]
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			out[dst] = src
			continue
		}
		if _, ok := named[src]; !ok {
			t.Errorf("named volume %q is not declared", src)
		}
	}
	return out
}

// hostPath returns the repo file mounted at containerPath (directly or inside a mounted dir).
func hostPath(m map[string]string, containerPath string) (string, bool) {
	for dst, src := range m {
		if containerPath == dst {
			return src, true
		}
		if strings.HasPrefix(containerPath, dst+"/") {
			return path.Join(src, strings.TrimPrefix(containerPath, dst+"/")), true
		}
	}
	return "", false
}

var envRef = regexp.MustCompile(`\$\{env:([A-Z0-9_]+)(?::-([^}]*))?\}`)

// collectorConfig reads a collector config's text, its env references and their defaults.
func collectorConfig(t *testing.T, rel string) (string, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(collectortest.RepoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, m := range envRef.FindAllStringSubmatch(string(raw), -1) {
		defaults[m[1]] = m[2]
	}
	return string(raw), defaults
}

func portOf(t *testing.T, hostport string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%q: %v", hostport, err)
	}
	return p
}

func publishes(ports []string, port string) bool {
	for _, p := range ports {
		if strings.HasSuffix(strings.SplitN(p, "/", 2)[0], ":"+port) {
			return true
		}
	}
	return false
}

func TestComposeServicesAndImages(t *testing.T) {
	c := loadCompose(t)
	want := []string{"agent", "gateway", "grafana", "jaeger", "prometheus", "tempo"}
	var have []string
	for name := range c.Services {
		have = append(have, name)
	}
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Errorf("services %v, want %v", have, want)
	}
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v?[0-9]+\.[0-9]+\.[0-9]+$`)
	for name, s := range c.Services {
		if !pinned.MatchString(s.Image) {
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		}
		for _, d := range s.DependsOn {
			if _, ok := c.Services[d]; !ok {
				t.Errorf("%s depends on unknown service %s", name, d)
			}
		}
	}
}

func TestComposeMountsExist(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		m := mounts(t, s.Volumes, c.Volumes)
		for dst, src := range m {
			if _, err := os.Stat(collectortest.RepoFile(t, src)); err != nil {
				t.Errorf("%s: mount %s → %s: %v", name, src, dst, err)
			}
		}
		// Every file a command names under /etc must come from a mount.
		for _, a := range commandArgs(t, s.Command) {
			_, val, _ := strings.Cut(a, "=")
			if !strings.HasPrefix(val, "/etc/") {
				continue
			}
			src, ok := hostPath(m, val)
			if !ok {
				t.Errorf("%s: %s is not mounted", name, val)
				continue
			}
			if _, err := os.Stat(collectortest.RepoFile(t, src)); err != nil {
				t.Errorf("%s: %s (from %s): %v", name, val, src, err)
			}
		}
	}
	gw := commandArgs(t, c.Services["gateway"].Command)
	for _, a := range collectortest.GatewayArgs {
		if !slices.Contains(gw, a) {
			t.Errorf("gateway command %v lacks %s, which the tests run it with", gw, a)
		}
	}
}

// TestComposeAddressesAgree follows every address from one file to the service it names.
func TestComposeAddressesAgree(t *testing.T) {
	c := loadCompose(t)
	agentText, agent := collectorConfig(t, "collector/agent.yaml")
	gatewayText, gateway := collectorConfig(t, "collector/gateway.yaml")
	_, jaeger := collectorConfig(t, "collector/jaeger.yaml")
	var tempo struct {
		Server struct {
			HTTPListenPort int `yaml:"http_listen_port"`
		} `yaml:"server"`
		Distributor struct {
			Receivers struct {
				OTLP struct {
					Protocols struct {
						GRPC struct{ Endpoint string } `yaml:"grpc"`
					} `yaml:"protocols"`
				} `yaml:"otlp"`
			} `yaml:"receivers"`
		} `yaml:"distributor"`
	}
	loadYAML(t, "collector/tempo.yaml", &tempo)

	// Each collector's compose environment only sets variables its config reads.
	for svc, text := range map[string]string{"agent": agentText, "gateway": gatewayText} {
		for k := range c.Services[svc].Environment {
			if !strings.Contains(text, "${env:"+k) {
				t.Errorf("%s: compose sets %s, which its config never reads", svc, k)
			}
		}
	}

	// pi-otel → agent: the published ports are the agent's OTLP ports.
	for _, k := range []string{"PI_OTEL_AGENT_OTLP_GRPC", "PI_OTEL_AGENT_OTLP_HTTP"} {
		if p := portOf(t, agent[k]); !publishes(c.Services["agent"].Ports, p) {
			t.Errorf("agent listens on %s (%s) but compose does not publish it: %v", p, k, c.Services["agent"].Ports)
		}
	}
	// endpoint checks that host:port names a compose service listening on that port.
	endpoint := func(what, hostport, service, port string) {
		t.Helper()
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			t.Errorf("%s: %q: %v", what, hostport, err)
			return
		}
		if h != service || p != port {
			t.Errorf("%s points at %s, want %s:%s", what, hostport, service, port)
		}
		if _, ok := c.Services[h]; !ok {
			t.Errorf("%s names %s, which is not a compose service", what, h)
		}
	}
	envOr := func(svc, k string, defaults map[string]string) string {
		if v, ok := c.Services[svc].Environment[k]; ok {
			return v
		}
		return defaults[k]
	}
	endpoint("agent → gateway", envOr("agent", "PI_OTEL_GATEWAY_ENDPOINT", agent), "gateway", portOf(t, gateway["PI_OTEL_GATEWAY_OTLP_GRPC"]))
	endpoint("gateway → jaeger", envOr("gateway", "PI_OTEL_JAEGER_ENDPOINT", gateway), "jaeger", portOf(t, jaeger["PI_OTEL_JAEGER_OTLP_GRPC"]))
	endpoint("gateway → tempo", envOr("gateway", "PI_OTEL_TEMPO_ENDPOINT", gateway), "tempo", portOf(t, tempo.Distributor.Receivers.OTLP.Protocols.GRPC.Endpoint))
	// The defaults in the configs name the compose services too, so an unset variable still works.
	endpoint("agent default → gateway", agent["PI_OTEL_GATEWAY_ENDPOINT"], "gateway", portOf(t, gateway["PI_OTEL_GATEWAY_OTLP_GRPC"]))
	endpoint("gateway default → jaeger", gateway["PI_OTEL_JAEGER_ENDPOINT"], "jaeger", portOf(t, jaeger["PI_OTEL_JAEGER_OTLP_GRPC"]))
	endpoint("gateway default → tempo", gateway["PI_OTEL_TEMPO_ENDPOINT"], "tempo", portOf(t, tempo.Distributor.Receivers.OTLP.Protocols.GRPC.Endpoint))

	// Prometheus scrapes the gateway's exporter and the collectors' own telemetry.
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			HonorLabels   bool   `yaml:"honor_labels"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	loadYAML(t, "dashboards/prometheus/prometheus.yml", &prom)
	targets := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				targets[tg] = true
				if sc.JobName == "pi-otel-gateway" && !sc.HonorLabels {
					t.Error("the gateway exporter job must honor labels (job and instance come from the resource)")
				}
			}
		}
	}
	for _, want := range []string{
		"gateway:" + portOf(t, gateway["PI_OTEL_GATEWAY_PROMETHEUS"]),
		"gateway:" + gateway["PI_OTEL_GATEWAY_TELEMETRY_PORT"],
		"agent:" + agent["PI_OTEL_AGENT_TELEMETRY_PORT"],
	} {
		if !targets[want] {
			t.Errorf("prometheus.yml does not scrape %s (targets %v)", want, targets)
		}
	}
	for tg := range targets {
		if _, ok := c.Services[strings.Split(tg, ":")[0]]; !ok {
			t.Errorf("prometheus.yml scrapes %s, not a compose service", tg)
		}
	}

	// Prometheus loads the rule files from where compose mounts them.
	pm := mounts(t, c.Services["prometheus"].Volumes, c.Volumes)
	for _, rf := range prom.RuleFiles {
		dirSrc, ok := hostPath(pm, path.Dir(rf))
		if !ok {
			t.Errorf("rule_files %s: directory not mounted", rf)
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(collectortest.RepoFile(t, dirSrc), path.Base(rf)))
		if len(matches) < 2 {
			t.Errorf("rule_files %s matches %v, want the alert and recording rules", rf, matches)
		}
	}

	// Grafana: datasource URLs name compose services on their listening ports.
	var ds struct {
		Datasources []struct{ UID, URL string }
	}
	loadYAML(t, "dashboards/grafana/provisioning/datasources/datasources.yaml", &ds)
	wantDS := map[string]string{
		"prometheus": "prometheus:9090",
		"tempo":      "tempo:" + strconv.Itoa(tempo.Server.HTTPListenPort),
		"jaeger":     "jaeger:" + portOf(t, jaeger["PI_OTEL_JAEGER_QUERY_HTTP"]),
	}
	for _, d := range ds.Datasources {
		u, err := url.Parse(d.URL)
		if err != nil {
			t.Errorf("%s: %v", d.UID, err)
			continue
		}
		if u.Host != wantDS[d.UID] {
			t.Errorf("datasource %s url %s, want host %s", d.UID, d.URL, wantDS[d.UID])
		}
		if _, ok := c.Services[u.Hostname()]; !ok {
			t.Errorf("datasource %s names %s, not a compose service", d.UID, u.Hostname())
		}
	}
	for svc, port := range map[string]string{
		"jaeger": portOf(t, jaeger["PI_OTEL_JAEGER_QUERY_HTTP"]), "tempo": strconv.Itoa(tempo.Server.HTTPListenPort),
		"prometheus": "9090", "grafana": "3000",
	} {
		if !publishes(c.Services[svc].Ports, port) {
			t.Errorf("%s: port %s is not published: %v", svc, port, c.Services[svc].Ports)
		}
	}

	// Grafana's dashboard provider reads the directory compose mounts the dashboards into.
	var prov struct {
		Providers []struct {
			Options struct{ Path string }
		}
	}
	loadYAML(t, "dashboards/grafana/provisioning/dashboards/dashboards.yaml", &prov)
	gm := mounts(t, c.Services["grafana"].Volumes, c.Volumes)
	for _, p := range prov.Providers {
		src, ok := hostPath(gm, p.Options.Path)
		if !ok {
			t.Errorf("dashboard provider path %s is not mounted", p.Options.Path)
			continue
		}
		if js, _ := filepath.Glob(filepath.Join(collectortest.RepoFile(t, src), "*.json")); len(js) == 0 {
			t.Errorf("dashboard provider path %s (%s) holds no dashboard", p.Options.Path, src)
		}
	}
	for _, sub := range []string{"/etc/grafana/provisioning/datasources", "/etc/grafana/provisioning/dashboards"} {
		if src, ok := hostPath(gm, sub); !ok {
			t.Errorf("%s is not mounted", sub)
		} else if _, err := os.Stat(collectortest.RepoFile(t, src)); err != nil {
			t.Errorf("%s: %v", sub, err)
		}
	}
}

func TestShippedPrometheusConfig(t *testing.T) {
	tool := proc.Tool(t, "promtool", "Debian package prometheus")
	out, err := exec.Command(tool, "check", "config", collectortest.RepoFile(t, "dashboards/prometheus/prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}
