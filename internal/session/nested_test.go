package session

import (
	"testing"

	"go.opentelemetry.io/otel/codes"
)

// A toolResult message's nestedCalls (the calls the tool made to other
// tools) are child execute_tool spans of its tool, counted in the root's
// tool calls; its usage (model work the tool did) counts on the tool span
// and in the root's totals.
func TestToolResultNestedCallsAndUsage(t *testing.T) {
	file := []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"user","content":"go","timestamp":1796119201000}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"codemode","arguments":{}}],"provider":"p","model":"m","usage":{"input":10,"output":1,"cost":{"total":0.5}},"stopReason":"toolUse","timestamp":1796119201100,"durationMs":100}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"codemode","content":[{"type":"text","text":"done"}],"isError":false,"timestamp":1796119201300,"durationMs":150,"usage":{"input":7,"output":2,"cost":{"total":0.25}},"nestedCalls":{"calls":[{"id":"c1/1","name":"read","status":"error","durationMs":3,"error":"ENOENT"},{"id":"c1/2","name":"bash","status":"ok","durationMs":20}],"complete":true}}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":20,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119201400,"durationMs":50}}
`)
	roots := traceBytes(t, file, Config{}).roots
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	root := roots[0]
	tool := root.find("execute_tool codemode")
	if len(tool) != 1 {
		t.Fatalf("no codemode span")
	}
	calls := tool[0].children
	if len(calls) != 2 || calls[0].name() != "execute_tool read" || calls[1].name() != "execute_tool bash" {
		t.Fatalf("children of the tool: %d", len(calls))
	}
	if calls[0].str("pi.nested.call") != "true" || calls[0].s.Status().Code != codes.Error || calls[1].s.Status().Code == codes.Error {
		t.Errorf("read %v %v, bash %v", calls[0].str("pi.nested.call"), calls[0].s.Status(), calls[1].s.Status())
	}
	if d := calls[1].s.EndTime().Sub(calls[1].s.StartTime()).Milliseconds(); d != 20 {
		t.Errorf("bash lasts %d ms, want its durationMs 20", d)
	}
	if tool[0].str("pi.cost.total") != "0.25" || tool[0].str("gen_ai.usage.output_tokens") != "2" {
		t.Errorf("tool usage: cost %s out %s", tool[0].str("pi.cost.total"), tool[0].str("gen_ai.usage.output_tokens"))
	}
	if root.str("pi.cost.total") != "1.75" || root.str("pi.tool_calls") != "3" || root.str("pi.tool_errors") != "1" {
		t.Errorf("root cost %s tool calls %s errors %s, want 1.75, 3, 1", root.str("pi.cost.total"), root.str("pi.tool_calls"), root.str("pi.tool_errors"))
	}
}
