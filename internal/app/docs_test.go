package app

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper"
)

// updating reports -update, which internal/testutil/spantree defines for
// the whole test binary.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const (
	docBegin = "<!-- settings: generated from internal/config's flag table by `go test ./internal/app -run TestConfigurationDoc -update`; do not edit -->"
	docEnd   = "<!-- end of settings -->"
)

// TestConfigurationDoc keeps docs/configuration.md true to the code: its
// tables of settings are generated from the same table as --help (every
// flag, its variables and its default, by group, and each command's own
// flags), and must match it.
func TestConfigurationDoc(t *testing.T) {
	path := repo.Path("docs/configuration.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md lacks the generated block (%q … %q)", docBegin, docEnd)
	}
	want := docBegin + "\n\n" + settingsTables(t, config.Flags()) + "\n" + docEnd
	if got := doc[i : j+len(docEnd)]; got != want {
		if updating() {
			if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(docEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/configuration.md's settings differ from the flag table; run go test ./internal/app -run TestConfigurationDoc -update\n--- want\n%s\n--- got\n%s", want, got)
	}
	// Every variable named anywhere in the flag table is in the doc, and
	// every flag of every command.
	for _, d := range config.Flags() {
		for _, v := range d.Envs {
			if !strings.Contains(doc, "`"+v+"`") {
				t.Errorf("docs/configuration.md does not name %s", v)
			}
		}
	}
	if n := len(config.Flags()); n < 30 {
		t.Fatalf("only %d flags in the table", n)
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// TestConfigurationDocFollowsRename: a variable renamed in the settings
// table and not in docs/configuration.md fails TestConfigurationDoc.
func TestConfigurationDocFollowsRename(t *testing.T) {
	doc := string(repo.Read(t, "docs/configuration.md"))
	flags := config.Flags()
	if !strings.Contains(doc, settingsTables(t, flags)) {
		t.Fatal("the doc does not hold the tables of the settings as they are")
	}
	for i, d := range flags {
		if len(d.Envs) == 0 {
			continue
		}
		renamed := slices.Clone(flags)
		renamed[i].Envs = append([]string{d.Envs[0] + "_RENAMED"}, d.Envs[1:]...)
		if strings.Contains(doc, settingsTables(t, renamed)) {
			t.Errorf("renaming %s in the table leaves the doc's tables matching", d.Envs[0])
		}
	}
}

func settingsTables(t *testing.T, flags []config.FlagDoc) string {
	var b strings.Builder
	for _, g := range config.Groups {
		fmt.Fprintf(&b, "### %s\n\n| flag | variable | meaning | default |\n|---|---|---|---|\n", g)
		for _, d := range flags {
			if d.Group != g {
				continue
			}
			name := "--" + d.Name
			if d.Placeholder != "" {
				name += " " + d.Placeholder
			}
			envs := make([]string, len(d.Envs))
			for i, e := range d.Envs {
				envs[i] = "`" + e + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, strings.Join(envs, ", "), cell(d.Text), cell(d.Default))
		}
		b.WriteString("\n")
	}
	b.WriteString("### Flags of one command\n\n| command | flag | variable | meaning | default |\n|---|---|---|---|---|\n")
	trailer := regexp.MustCompile(`^(.*) \[(?:env ([^;\]]+))?(?:; )?(?:default (.*))?\]$`)
	line := regexp.MustCompile(`^  --(\S+)(?: (\S+))?$`)
	for _, cmd := range commands {
		_, out, _ := mainWith(nil, cmd, "--help")
		_, sect, ok := strings.Cut(out, "Flags of "+cmd+":\n")
		if !ok {
			continue
		}
		sect, _, _ = strings.Cut(sect, "\n\n")
		lines := strings.Split(sect, "\n")
		for k := 0; k < len(lines); k++ {
			m := line.FindStringSubmatch(lines[k])
			if m == nil {
				t.Fatalf("%s help: unexpected line %q", cmd, lines[k])
			}
			var text []string
			for k+1 < len(lines) && strings.HasPrefix(lines[k+1], "      ") {
				k++
				text = append(text, strings.TrimSpace(lines[k]))
			}
			meaning := strings.Join(text, " ")
			vars, def := "", ""
			if tm := trailer.FindStringSubmatch(meaning); tm != nil {
				meaning, def = tm[1], tm[3]
				for i, v := range strings.Split(tm[2], ", ") {
					if v != "" {
						if i > 0 {
							vars += ", "
						}
						vars += "`" + v + "`"
					}
				}
			}
			name := "--" + m[1]
			if m[2] != "" {
				name += " " + m[2]
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", cmd, name, vars, cell(meaning), cell(def))
		}
	}
	return b.String()
}

// TestDocCommandsParse: every pi-otel command line in the README and the
// docs names a command that exists and only flags it knows, so a
// newcomer's first copy and paste does not end in "unknown flag".
func TestDocCommandsParse(t *testing.T) {
	docs, err := filepath.Glob(repo.Path("docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{repo.Path("README.md")}, docs...)
	// Every command pi-otel's usage lists, so a new one is covered at once.
	cmds := usageCommands(t)
	cmdLine := regexp.MustCompile(`(?:^|[\s|;(])pi-otel (` + strings.Join(append(cmds, "help"), "|") + `)((?: [^#\x60\n]*)?)`)
	n := 0
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		f = filepath.Base(f)
		if strings.Contains(string(b), "cmd/pi-otel@latest") {
			t.Errorf("%s: go install …@latest does not work: the module is not published", f)
		}
		for _, m := range cmdLine.FindAllStringSubmatch(string(b), -1) {
			cmd, rest := m[1], strings.Fields(m[2])
			seen[cmd] = true
			if cmd == "version" || cmd == "help" {
				continue
			}
			_, out, _ := mainWith(nil, cmd, "--help")
			for _, a := range rest {
				if a == "--" {
					break
				}
				if !strings.HasPrefix(a, "--") || a == "--…" {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				name = strings.TrimRight(name, ".,;:)`")
				if name == "" || name == "help" {
					continue
				}
				n++
				if !strings.Contains(out, "\n  --"+name+"\n") && !strings.Contains(out, "\n  --"+name+" ") {
					t.Errorf("%s: %q uses --%s, which pi-otel %s does not know", f, strings.TrimSpace(m[0]), name, cmd)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d flags found in the docs' command lines; is the pattern right?", n)
	}
	for _, c := range cmds {
		if !seen[c] && c != "version" {
			t.Errorf("no command line in the README or docs shows pi-otel %s", c)
		}
	}
}

// usageCommands are the commands `pi-otel help` lists.
func usageCommands(t *testing.T) []string {
	_, out, _ := mainWith(nil, "help")
	usage, _, _ := strings.Cut(out, "\n\n"+"Start here:")
	var cmds []string
	for _, m := range regexp.MustCompile(`(?m)^  pi-otel (\w+)`).FindAllStringSubmatch(usage, -1) {
		cmds = append(cmds, m[1])
	}
	if !slices.Contains(cmds, "watch") || len(cmds) < 6 {
		t.Fatalf("pi-otel help lists %v; is the pattern right?", cmds)
	}
	return cmds
}

// TestScopeNamesPublic holds every instrumentation scope pi-otel emits to
// docs/span-model.md's table, and to names without "internal": users see
// them in every backend, so they must not follow the package layout.
func TestScopeNamesPublic(t *testing.T) {
	b, err := os.ReadFile(repo.Path("docs/span-model.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range []string{agentmap.ScopeName, mapper.ScopeName, session.ScopeName, rpc.ScopeName,
		metrics.ScopeName, spanlogs.ScopeName} {
		if strings.Contains(name, "internal") || !strings.HasPrefix(name, "github.com/pi-otel/pi-otel/") {
			t.Errorf("scope %q: want the module path and a public name", name)
		}
		if !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("docs/span-model.md's scope table has no row for %q", name)
		}
	}
}
