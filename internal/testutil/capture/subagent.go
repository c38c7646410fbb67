package capture

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
)

// The subagent scenarios load the subagent extension Pi ships as an example
// (examples/extensions/subagent in its npm package). Each child is another
// `pi --mode json -p --no-session` process with the parent's environment, so
// it asks the same fake model: the script below interleaves the parent's
// responses with its children's, in the order the requests arrive.

// scoutAgent is the agent the children run: no model of its own, so a child
// uses the parent's fake provider and model.
const scoutAgent = `---
name: scout
description: Looks things up for the parent agent
tools: bash, read
---

You are a scout. Answer briefly.
`

// subagentExtension is index.ts of the example extension in the npm package
// whose bin is pi.
func subagentExtension(pi string) (string, error) {
	bin, err := filepath.EvalSymlinks(pi) // node_modules/.bin/pi → …/pi-coding-agent/dist/…/cli.js
	if err != nil {
		return "", err
	}
	// The package root is the nearest directory up with a package.json.
	for dir := filepath.Dir(bin); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
			ext := filepath.Join(dir, "examples", "extensions", "subagent", "index.ts")
			if _, err := os.Stat(ext); err != nil {
				return "", fmt.Errorf("subagent example extension: %w", err)
			}
			return ext, nil
		}
	}
	return "", fmt.Errorf("no package.json above %s", bin)
}

// withSubagents writes the scout agent into the agent dir and loads the
// extension.
func withSubagents(env *pitest.Env) ([]string, error) {
	dir := filepath.Join(env.AgentDir, "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "scout.md"), []byte(scoutAgent), 0o644); err != nil {
		return nil, err
	}
	ext, err := subagentExtension(env.Pi)
	if err != nil {
		return nil, err
	}
	return []string{"-e", ext}, nil
}

// subagentResult is the details of the first subagent tool_execution_end.
func subagentResult(recs []map[string]any) (details map[string]any, isError bool) {
	for _, r := range recs {
		if r["type"] != "tool_execution_end" || r["toolName"] != "subagent" {
			continue
		}
		res, _ := r["result"].(map[string]any)
		details, _ = res["details"].(map[string]any)
		isError, _ = r["isError"].(bool)
		return details, isError
	}
	return nil, false
}

// checkSubagent checks a settled run whose subagent call ran n children in
// mode, each with messages, and failed or not.
func checkSubagent(mode string, n int, failed bool) func(*Capture, []map[string]any) error {
	return func(c *Capture, recs []map[string]any) error {
		d, isErr := subagentResult(recs)
		results, _ := d["results"].([]any)
		withMessages := 0
		for _, r := range results {
			if m, _ := r.(map[string]any); m != nil {
				if msgs, _ := m["messages"].([]any); len(msgs) > 0 {
					withMessages++
				}
			}
		}
		return all(settled(c, recs, 1),
			expect(d != nil, "no subagent tool_execution_end with details"),
			expect(d["mode"] == mode, "mode %v, want %s", d["mode"], mode),
			expect(len(results) == n && withMessages == n, "%d results (%d with messages), want %d", len(results), withMessages, n),
			expect(isErr == failed, "isError %v, want %v", isErr, failed))
	}
}

func subagentScenarios() []Scenario {
	return []Scenario{
		{
			Name:        "subagent-single",
			Description: "the subagent example extension runs one child, which runs bash then answers",
			Prepare:     withSubagents,
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Call("call_sub_1", "subagent", map[string]any{"agent": "scout", "task": "Count the files"})),
				fakemodel.Tools(fakemodel.Bash("call_child_bash", "echo child work")),
				fakemodel.Text("The child found 3 files.", 2),
				fakemodel.Text("The scout says 3 files.", 2),
			},
			Args:  jsonArgs("Delegate to the scout"),
			Check: checkSubagent("single", 1, false),
		},
		{
			Name:        "subagent-parallel",
			Description: "the subagent example extension runs two children in parallel",
			Prepare:     withSubagents,
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Call("call_sub_par", "subagent", map[string]any{"tasks": []any{
					map[string]any{"agent": "scout", "task": "Look at the docs"},
					map[string]any{"agent": "scout", "task": "Look at the tests"},
				}})),
				// The children ask in either order; both answers fit both.
				fakemodel.Text("One child's findings.", 2),
				fakemodel.Text("Another child's findings.", 2),
				fakemodel.Text("Both scouts reported.", 2),
			},
			Args:  jsonArgs("Delegate two tasks"),
			Check: checkSubagent("parallel", 2, false),
		},
		{
			Name:        "subagent-chain",
			Description: "the subagent example extension runs a chain of two children, the second given the first's output",
			Prepare:     withSubagents,
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Call("call_sub_chain", "subagent", map[string]any{"chain": []any{
					map[string]any{"agent": "scout", "task": "Find the entry point"},
					map[string]any{"agent": "scout", "task": "Summarise: {previous}"},
				}})),
				fakemodel.Text("The entry point is main.go.", 2),
				fakemodel.Text("Summary: main.go starts it.", 2),
				fakemodel.Text("The chain finished.", 2),
			},
			Args:  jsonArgs("Run a chain"),
			Check: checkSubagent("chain", 2, false),
		},
		{
			Name:        "subagent-fail",
			Description: "the child's model call fails with HTTP 400; the parent's tool result is an error",
			Prepare:     withSubagents,
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Call("call_sub_fail", "subagent", map[string]any{"agent": "scout", "task": "Do something impossible"})),
				fakemodel.Error(400, `{"error":{"message":"Invalid request: secret-token-abc123 rejected","type":"invalid_request_error"}}`),
				fakemodel.Text("The scout failed.", 2),
			},
			Args:  jsonArgs("Delegate a failing task"),
			Check: checkSubagent("single", 1, true),
		},
	}
}
