package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key inside a name (the project folder's, a model's, a provider's or a
// tool's) reaches no span name, attribute or metric label, whether or not
// content is captured: the redactor's rules apply to names always.
func TestSecretsInNamesAreRedacted(t *testing.T) {
	const (
		folder   = "proj-ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
		model    = "model-sk-ant-" + "api03-abcdefghijklmnopqrstuvwx"
		provider = "AKIA" + "ABCDEFGHIJKLMNOP"
		tool     = "tool-ghp_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	)
	data, err := os.ReadFile(captures + "bash-tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		`/001/work"`, `/001/`+folder+`"`,
		`"model":"fake-model"`, `"model":"`+model+`"`,
		`"provider":"fake"`, `"provider":"`+provider+`"`,
		`"toolName":"bash"`, `"toolName":"`+tool+`"`,
		`"name":"bash"`, `"name":"`+tool+`"`,
	).Replace(string(data))
	for _, name := range []string{folder, model, provider, tool} {
		if !strings.Contains(s, name) {
			t.Fatalf("the stream does not carry %q", name)
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, capture := range []bool{false, true} {
		traces, metrics := filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "metrics.jsonl")
		os.Remove(traces)
		os.Remove(metrics)
		args := []string{"replay", "--quiet", "--traces-file", traces, "--metrics-file", metrics}
		if capture {
			args = append(args, "--capture-content")
		}
		if code, _, stderr := mainRun(t, append(args, in)...); code != 0 {
			t.Fatalf("replay exited %d: %s", code, stderr)
		}
		for _, f := range []string{traces, metrics} {
			out, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"ghp_abcdef", "sk-ant-api03", provider, "ghp_ABCDEF"} {
				if strings.Contains(string(out), secret) {
					t.Errorf("capture %v: %s holds %q", capture, filepath.Base(f), secret)
				}
			}
		}
		// A redacted name is no label-shaped token: the labels say _OTHER.
		if out, _ := os.ReadFile(metrics); !strings.Contains(string(out), `"key":"gen_ai.tool.name","value":{"stringValue":"_OTHER"}`) {
			t.Errorf("capture %v: no tool name label _OTHER in the metrics", capture)
		}
		out, _ := os.ReadFile(traces)
		for _, want := range []string{`"execute_tool tool-[REDACTED:github-token]"`, `"proj-[REDACTED:github-token]"`} {
			if !strings.Contains(string(out), want) {
				t.Errorf("capture %v: the traces lack %s", capture, want)
			}
		}
	}
}

// The user's --redact patterns apply to names as well.
func TestRedactPatternsApplyToNames(t *testing.T) {
	data, err := os.ReadFile(captures + "bash-tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(data), `/001/work"`, `/001/acme-codename-orion"`)
	dir := t.TempDir()
	in, traces := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(in, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := mainRun(t, "replay", "--quiet", "--redact", "codename-[a-z]+", "--traces-file", traces, in); code != 0 {
		t.Fatalf("replay exited %d: %s", code, stderr)
	}
	out, err := os.ReadFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "orion") || !strings.Contains(string(out), `"acme-[REDACTED:custom]"`) {
		t.Errorf("pi.project was not redacted by the user's pattern")
	}
}
