package app

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// mainWith runs Main with args and env, and returns the exit code and
// what was written to stdout and stderr.
func mainWith(env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

var commands = []string{"run", "rpc", "replay", "demo", "watch"}

// TestWrongFlagOneLine: a mistyped flag gets one prefixed line that says
// where help is, not Go's message and every flag.
func TestWrongFlagOneLine(t *testing.T) {
	for _, cmd := range commands {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--bogus"}, "pi-otel " + cmd + ": unknown flag --bogus; see pi-otel " + cmd + " --help\n"},
			{[]string{"-bogus"}, "pi-otel " + cmd + ": unknown flag --bogus; see pi-otel " + cmd + " --help\n"},
			{[]string{"--endpoint"}, "pi-otel " + cmd + ": flag --endpoint needs a value; see pi-otel " + cmd + " --help\n"},
		} {
			code, out, errs := mainWith(nil, append([]string{cmd}, tc.args...)...)
			if code != 2 || out != "" || errs != tc.want {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", cmd, tc.args, code, out, errs, tc.want)
			}
		}
	}
	// replay's own flags are read as the shared ones are (--quiet=maybe).
	code, _, errs := mainWith(nil, "replay", "--follow=maybe", "x")
	if want := "pi-otel: --follow \"maybe\": want true or false\n"; code != 2 || errs != want {
		t.Errorf("bad boolean: exit %d, stderr %q, want %q", code, errs, want)
	}
	for _, args := range [][]string{{"run"}, {"rpc"}, {"replay"}, {"replay", "a", "b"}, {"demo", "x"}} {
		code, _, errs := mainWith(nil, args...)
		if want := "; see pi-otel " + args[0] + " --help\n"; code != 2 || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line ending %q", args, code, errs, want)
		}
	}
	code, _, errs = mainWith(nil, "frobnicate")
	if want := "pi-otel: unknown command \"frobnicate\"; see pi-otel --help\n"; code != 2 || errs != want {
		t.Errorf("unknown command: exit %d, stderr %q, want %q", code, errs, want)
	}
}

// TestConfigErrorOnce: a bad setting is one line, once, with the prefix,
// even though traces and metrics both read it; and it is refused when no
// endpoint makes it matter.
func TestConfigErrorOnce(t *testing.T) {
	for _, args := range [][]string{
		{"--protocol", "bogus"},
		{"--endpoint", "not a url"},
		{"--endpoint", "::::"},
		{"--endpoint", "http://"},
		{"--endpoint", "https://localhost:4317", "--client-key", "k.pem"},
	} {
		code, _, errs := mainWith(nil, append([]string{"replay"}, append(args, "-")...)...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "pi-otel: ") {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and one line", args, code, errs)
		}
	}
}

// TestHelpTeaches: every command's help says what it does, shows
// examples, and lists every flag under a group with an upper-case
// placeholder, its variable and its default.
func TestHelpTeaches(t *testing.T) {
	placeholder := regexp.MustCompile(`^  --([a-z-]+)(?: (\S+))?$`)
	for _, cmd := range commands {
		for _, h := range []string{"--help", "-h"} {
			code, out, errs := mainWith(nil, cmd, h)
			if code != 0 || errs != "" {
				t.Fatalf("%s %s: exit %d, stderr %q", cmd, h, code, errs)
			}
			doc := commandDocs[cmd]
			if doc.about == "" || len(doc.examples) < 2 {
				t.Errorf("%s: no description or fewer than two examples", cmd)
			}
			for _, want := range append([]string{"Usage: pi-otel " + cmd, firstLine(doc.about), "Examples:"}, config.Groups...) {
				if !strings.Contains(out, want) {
					t.Errorf("%s %s: help lacks %q", cmd, h, want)
				}
			}
			seen := map[string]bool{}
			for _, line := range strings.Split(out, "\n") {
				m := placeholder.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				seen[m[1]] = true
				if m[2] != "" && m[2] != strings.ToUpper(m[2]) {
					t.Errorf("%s: --%s has placeholder %q; want the upper-case style", cmd, m[1], m[2])
				}
			}
			for _, d := range config.Flags() {
				if !seen[d.Name] {
					t.Errorf("%s: help does not list --%s", cmd, d.Name)
				}
			}
		}
	}
	_, out, _ := mainWith(nil, "replay", "--help")
	for _, want := range []string{"  --poll DURATION\n", "default 250ms]", "PI_OTEL_FOLLOW_POLL", "  --endpoint URL\n",
		"[env OTEL_EXPORTER_OTLP_ENDPOINT; default"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay help lacks %q", want)
		}
	}
	code, out, _ := mainWith(nil, "help", "replay")
	if code != 0 || !strings.Contains(out, "Usage: pi-otel replay") {
		t.Errorf("pi-otel help replay: exit %d, %q", code, out)
	}
	code, out, _ = mainWith(nil, "--help")
	if code != 0 || !strings.Contains(out, "Start here:") || !strings.Contains(out, "pi-otel COMMAND --help") {
		t.Errorf("pi-otel --help: exit %d:\n%s", code, out)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Warnings about bad records stop after a burst; the end says how many
// more there were, before the summary that counts them all.
func TestHeldBackWarningsCounted(t *testing.T) {
	capture := repo.Read(t, "testdata/captures/pi-0.73.x/bash-tool.jsonl")
	in := string(capture) + strings.Repeat("{bad\n", 20)
	var out, errb bytes.Buffer
	code := Main(t.Context(), Env{Args: []string{"replay", "--traces-exporter", "none", "-"}, Stdin: strings.NewReader(in),
		Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "pi-otel: 15 more bad records not reported one by one\n") ||
		!strings.Contains(errb.String(), "; 20 malformed records") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// The demo's tree is the same every time: parallel tools that start at
// one instant keep the stream's order rather than their random span ids'.
func TestDemoTreeIsStable(t *testing.T) {
	var first string
	for i := 0; i < 8; i++ {
		code, out, errs := mainWith(nil, "demo", "--spool-dir", "none")
		if code != 0 {
			t.Fatalf("demo exit %d\n%s", code, errs)
		}
		// Trace ids are random; the tree under them is not.
		// The tree is on stdout, free in a demo; trace ids are random.
		tree := regexp.MustCompile(`[0-9a-f]{32}`).ReplaceAllString(out, "")
		if strings.Contains(errs, "execute_tool") || !strings.HasPrefix(errs, "pi-otel: 2 traces") {
			t.Fatalf("stderr has more than the status lines:\n%s", errs)
		}
		if i == 0 {
			first = tree
			if !strings.Contains(tree, "execute_tool") {
				t.Fatalf("no tools in the demo tree:\n%s", tree)
			}
			// The README shows this tree: it must be what users see.
			readme := repo.Read(t, "README.md")
			shown := regexp.MustCompile("(?s)\n(invoke_agent pi  [0-9.]+m?s  model=fake-model in=2944 .*?)\n```").FindSubmatch(readme)
			if shown == nil || !strings.Contains(tree, string(shown[1])) {
				t.Errorf("the README's tree is not the demo's:\n%s", tree)
			}
		} else if tree != first {
			t.Fatalf("run %d printed another tree:\n%s\nthan the first:\n%s", i+1, tree, first)
		}
	}
}
