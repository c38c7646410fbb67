//go:build realstack

package operator_test

import (
	"bytes"
	"context"
	"fmt"
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

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// No docker engine runs here, so docker-compose.yml is loaded by compose-go, the loader and JSON
// schema Docker Compose itself uses (an unknown key or a wrong type fails to load), and then
// checked against the repository: mounts, image pins, the collector build, ports, and every
// address one file gives for another service.

// loadComposeContent loads content as docker-compose.yml at the repository root, with an empty
// environment so the machine's variables cannot change the result.
func loadComposeContent(t *testing.T, content []byte) (*composetypes.Project, error) {
	t.Helper()
	root := repo.Path(".")
	return composeloader.LoadWithContext(context.Background(), composetypes.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []composetypes.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml"), Content: content}},
		Environment: composetypes.Mapping{},
	}, func(o *composeloader.Options) {
		o.SetProjectName("pi-otel", true)
		o.ResolvePaths = true
	})
}

func loadCompose(t *testing.T) *composetypes.Project {
	t.Helper()
	raw, err := os.ReadFile(repo.Path("docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadComposeContent(t, raw)
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p
}

// TestComposeLoaderIsStrict proves the loader above can fail: an unknown key, a wrong type and a
// dangling depends_on are each refused.
func TestComposeLoaderIsStrict(t *testing.T) {
	raw, err := os.ReadFile(repo.Path("docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, edit := range map[string][2]string{
		"unknown key":  {"    restart: unless-stopped\n", "    restart: unless-stopped\n    restrat: always\n"},
		"wrong type":   {"      - \"9090:9090\"\n", "      - [9090, 9090]\n"},
		"unknown deps": {"    depends_on:\n      - prometheus\n", "    depends_on:\n      - prometheus-typo\n"},
	} {
		if !bytes.Contains(raw, []byte(edit[0])) {
			t.Fatalf("%s: docker-compose.yml no longer holds %q", what, edit[0])
		}
		bad := bytes.Replace(raw, []byte(edit[0]), []byte(edit[1]), 1)
		if _, err := loadComposeContent(t, bad); err == nil {
			t.Errorf("%s: the loader accepted docker-compose.yml with %q", what, edit[1])
		} else {
			t.Logf("%s refused: %v", what, err)
		}
	}
}

func loadYAML(t *testing.T, rel string, out any) {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// mounts maps container path → host path (relative to the repo) for bind mounts, and checks
// that every named volume is declared.
func mounts(t *testing.T, p *composetypes.Project, svc composetypes.ServiceConfig) map[string]string {
	t.Helper()
	root := repo.Path(".")
	out := map[string]string{}
	for _, v := range svc.Volumes {
		switch v.Type {
		case composetypes.VolumeTypeBind:
			rel, err := filepath.Rel(root, v.Source)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: bind mount %s is outside the repository", svc.Name, v.Source)
				continue
			}
			out[v.Target] = rel
		case composetypes.VolumeTypeVolume:
			if _, ok := p.Volumes[v.Source]; !ok {
				t.Errorf("%s: named volume %q is not declared", svc.Name, v.Source)
			}
		default:
			t.Errorf("%s: volume %s of type %s", svc.Name, v.Target, v.Type)
		}
	}
	return out
}

// namedVolumeAt returns the named volume mounted at target, if any.
func namedVolumeAt(svc composetypes.ServiceConfig, target string) (string, bool) {
	for _, v := range svc.Volumes {
		if v.Type == composetypes.VolumeTypeVolume && v.Target == target {
			return v.Source, true
		}
	}
	return "", false
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

func env(svc composetypes.ServiceConfig, k string) (string, bool) {
	v, ok := svc.Environment[k]
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}

var envRef = regexp.MustCompile(`\$\{env:([A-Z0-9_]+)(?::-([^}]*))?\}`)

// collectorConfig reads a collector config's text, its env references and their defaults.
func collectorConfig(t *testing.T, rel string) (string, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(rel))
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

// publishes says whether svc publishes container port port on the host.
func publishes(svc composetypes.ServiceConfig, port string) bool {
	for _, p := range svc.Ports {
		if strconv.Itoa(int(p.Target)) == port && p.Published != "" {
			return true
		}
	}
	return false
}

// gatewayServices are the compose services running collector/gateway.yaml.
func gatewayServices(t *testing.T, c *composetypes.Project) []string {
	t.Helper()
	var out []string
	for name, s := range c.Services {
		if slices.Contains(s.Command, "--config=/etc/pi-otel-collector/gateway.yaml") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if len(out) < 2 {
		t.Fatalf("compose runs %d gateways (%v), want at least two behind the agent", len(out), out)
	}
	return out
}

func TestComposeServicesAndImages(t *testing.T) {
	c := loadCompose(t)
	want := []string{"agent", "gateway-1", "gateway-2", "grafana", "jaeger", "prometheus", "tempo"}
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
	}

	// The agent and gateways run the project's distribution, built from collector/Dockerfile and
	// tagged with the release every component in collector/builder-config.yaml is pinned at.
	var builder struct {
		Receivers, Processors, Exporters, Connectors, Extensions []struct{ GoMod string }
	}
	loadYAML(t, "collector/builder-config.yaml", &builder)
	releases := map[string]bool{}
	for _, list := range [][]struct{ GoMod string }{builder.Receivers, builder.Processors, builder.Exporters, builder.Connectors, builder.Extensions} {
		for _, m := range list {
			f := strings.Fields(m.GoMod)
			releases[strings.TrimPrefix(f[len(f)-1], "v")] = true
		}
	}
	if len(releases) != 1 {
		t.Fatalf("collector/builder-config.yaml mixes releases %v", releases)
	}
	var release string
	for r := range releases {
		release = r
	}
	root := repo.Path(".")
	for _, name := range append(gatewayServices(t, c), "agent") {
		s := c.Services[name]
		if s.Image != "pi-otel-collector:"+release {
			t.Errorf("%s: image %q, want pi-otel-collector:%s", name, s.Image, release)
		}
		if s.Build == nil || s.Build.Context != root || s.Build.Dockerfile != "collector/Dockerfile" {
			t.Errorf("%s: build %+v, want context %s and dockerfile collector/Dockerfile", name, s.Build, root)
		}
	}
	checkDockerfile(t, "collector/Dockerfile")

	// Jaeger's image is the release the tests build and run (tools/jaeger). A Jaeger v2 release
	// carries two versions: v1.N.0 for its Go module and 2.(N-63).0 for its image (v1.63.0 is 2.0.0).
	mod, err := os.ReadFile(repo.Path("tools/jaeger/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/jaegertracing/jaeger v1\.([0-9]+)\.([0-9]+)\b`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("tools/jaeger/go.mod requires no github.com/jaegertracing/jaeger v1.N.P")
	}
	minor, _ := strconv.Atoi(string(m[1]))
	if want := fmt.Sprintf("jaegertracing/jaeger:2.%d.%s", minor-63, m[2]); c.Services["jaeger"].Image != want {
		t.Errorf("jaeger: image %q, but the tests run module v1.%s.%s: want %s", c.Services["jaeger"].Image, m[1], m[2], want)
	}
}

// checkDockerfile checks that every file the Dockerfile copies from the build context exists and
// that its base images are pinned.
func checkDockerfile(t *testing.T, rel string) {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	copies := 0
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "FROM":
			if f[1] == "scratch" {
				continue
			}
			if !regexp.MustCompile(`:[0-9a-z.-]*[0-9][0-9a-z.-]*$`).MatchString(f[1]) {
				t.Errorf("%s: base image %s is not pinned", rel, f[1])
			}
		case "COPY":
			args := slices.DeleteFunc(f[1:], func(a string) bool { return strings.HasPrefix(a, "--chown") })
			if strings.HasPrefix(args[0], "--from") {
				continue
			}
			for _, src := range args[:len(args)-1] {
				copies++
				if _, err := os.Stat(repo.Path(src)); err != nil {
					t.Errorf("%s copies %s: %v", rel, src, err)
				}
			}
		}
	}
	if copies == 0 {
		t.Errorf("%s copies nothing from the repository", rel)
	}
}

func TestComposeMountsExist(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		m := mounts(t, c, s)
		for dst, src := range m {
			if _, err := os.Stat(repo.Path(src)); err != nil {
				t.Errorf("%s: mount %s → %s: %v", name, src, dst, err)
			}
		}
		// Every file a command names under /etc must come from a mount.
		for _, a := range s.Command {
			_, val, _ := strings.Cut(a, "=")
			if !strings.HasPrefix(val, "/etc/") {
				continue
			}
			src, ok := hostPath(m, val)
			if !ok {
				t.Errorf("%s: %s is not mounted", name, val)
				continue
			}
			if _, err := os.Stat(repo.Path(src)); err != nil {
				t.Errorf("%s: %s (from %s): %v", name, val, src, err)
			}
		}
	}
	for _, gw := range gatewayServices(t, c) {
		for _, a := range collectortest.GatewayArgs {
			if !slices.Contains(c.Services[gw].Command, a) {
				t.Errorf("%s command %v lacks %s, which the tests run it with", gw, c.Services[gw].Command, a)
			}
		}
	}
	// The agent's persistent queue lives on a named volume, where its config puts it: in the
	// container's own filesystem it would not survive a re-created container.
	_, agent := collectorConfig(t, "collector/agent.yaml")
	dir := agent["PI_OTEL_AGENT_QUEUE_DIR"]
	if v, ok := env(c.Services["agent"], "PI_OTEL_AGENT_QUEUE_DIR"); ok {
		dir = v
	}
	if _, ok := namedVolumeAt(c.Services["agent"], dir); !ok {
		t.Errorf("agent: the queue directory %s is not a named volume", dir)
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
	gateways := gatewayServices(t, c)

	// Each collector's compose environment only sets variables its config reads.
	texts := map[string]string{"agent": agentText}
	for _, gw := range gateways {
		texts[gw] = gatewayText
	}
	for svc, text := range texts {
		for k := range c.Services[svc].Environment {
			if !strings.Contains(text, "${env:"+k) {
				t.Errorf("%s: compose sets %s, which its config never reads", svc, k)
			}
		}
	}

	// pi-otel → agent: the published ports are the agent's OTLP ports.
	for _, k := range []string{"PI_OTEL_AGENT_OTLP_GRPC", "PI_OTEL_AGENT_OTLP_HTTP"} {
		if p := portOf(t, agent[k]); !publishes(c.Services["agent"], p) {
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
		if v, ok := env(c.Services[svc], k); ok {
			return v
		}
		return defaults[k]
	}
	// agent → gateways: the static resolver's list names every gateway service, once, on the
	// gateway's OTLP port, both as compose sets it and as the config's default.
	gwPort := portOf(t, gateway["PI_OTEL_GATEWAY_OTLP_GRPC"])
	for what, list := range map[string]string{
		"agent → gateways":         envOr("agent", "PI_OTEL_GATEWAYS", agent),
		"agent default → gateways": agent["PI_OTEL_GATEWAYS"],
	} {
		var hosts []string
		if err := yaml.Unmarshal([]byte(list), &hosts); err != nil {
			t.Errorf("%s: %q is not a YAML list: %v", what, list, err)
			continue
		}
		if len(hosts) != len(gateways) {
			t.Errorf("%s: %v, want one entry per gateway service %v", what, hosts, gateways)
		}
		for i, h := range hosts {
			if i < len(gateways) {
				endpoint(what, h, gateways[i], gwPort)
			}
		}
	}
	for _, gw := range gateways {
		endpoint(gw+" → jaeger", envOr(gw, "PI_OTEL_JAEGER_ENDPOINT", gateway), "jaeger", portOf(t, jaeger["PI_OTEL_JAEGER_OTLP_GRPC"]))
		endpoint(gw+" → tempo", envOr(gw, "PI_OTEL_TEMPO_ENDPOINT", gateway), "tempo", portOf(t, tempo.Distributor.Receivers.OTLP.Protocols.GRPC.Endpoint))
	}
	// The defaults in the configs name the compose services too, so an unset variable still works.
	endpoint("gateway default → jaeger", gateway["PI_OTEL_JAEGER_ENDPOINT"], "jaeger", portOf(t, jaeger["PI_OTEL_JAEGER_OTLP_GRPC"]))
	endpoint("gateway default → tempo", gateway["PI_OTEL_TEMPO_ENDPOINT"], "tempo", portOf(t, tempo.Distributor.Receivers.OTLP.Protocols.GRPC.Endpoint))

	// Prometheus scrapes every gateway's exporter and the collectors' own telemetry.
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
	wantTargets := []string{"agent:" + agent["PI_OTEL_AGENT_TELEMETRY_PORT"]}
	for _, gw := range gateways {
		wantTargets = append(wantTargets, gw+":"+portOf(t, gateway["PI_OTEL_GATEWAY_PROMETHEUS"]), gw+":"+gateway["PI_OTEL_GATEWAY_TELEMETRY_PORT"])
	}
	for _, want := range wantTargets {
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
	pm := mounts(t, c, c.Services["prometheus"])
	for _, rf := range prom.RuleFiles {
		dirSrc, ok := hostPath(pm, path.Dir(rf))
		if !ok {
			t.Errorf("rule_files %s: directory not mounted", rf)
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(repo.Path(dirSrc), path.Base(rf)))
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
		if !publishes(c.Services[svc], port) {
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
	gm := mounts(t, c, c.Services["grafana"])
	for _, p := range prov.Providers {
		src, ok := hostPath(gm, p.Options.Path)
		if !ok {
			t.Errorf("dashboard provider path %s is not mounted", p.Options.Path)
			continue
		}
		if js, _ := filepath.Glob(filepath.Join(repo.Path(src), "*.json")); len(js) == 0 {
			t.Errorf("dashboard provider path %s (%s) holds no dashboard", p.Options.Path, src)
		}
	}
	for _, sub := range []string{"/etc/grafana/provisioning/datasources", "/etc/grafana/provisioning/dashboards"} {
		if src, ok := hostPath(gm, sub); !ok {
			t.Errorf("%s is not mounted", sub)
		} else if _, err := os.Stat(repo.Path(src)); err != nil {
			t.Errorf("%s: %v", sub, err)
		}
	}
}

func TestShippedPrometheusConfig(t *testing.T) {
	tool := proc.Promtool(t)
	out, err := exec.Command(tool, "check", "config", repo.Path("dashboards/prometheus/prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}
