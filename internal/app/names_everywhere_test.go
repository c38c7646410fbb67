package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyBody is the random part of the key planted in names: the redactor's
// anthropic-key rule takes it whole, so after redaction it is nowhere.
const keyBody = "api03-NameLeakQ7x2Zr9Wm4Kp8Vt"

// A plantedName is a field of a Pi record that holds a name, with the
// value planted in it: the field's tag, a dash and a key. Each tag starts
// with Q, so that no tag's marker is found inside another's.
type plantedName struct {
	field string // where it is planted, for the messages
	tag   string
	reach reach
}

// reach is when a field reaches telemetry.
type reach int

const (
	always   reach = iota
	captured       // only in captured content
	never          // pi-otel does not read it
)

func (p plantedName) value() string { return p.tag + "-sk-ant-" + keyBody }

// marker is what the exported value becomes.
func (p plantedName) marker() string { return p.tag + "-[REDACTED:anthropic-key]" }

// streamNames are the named fields of Pi's json-mode records.
var streamNames = map[string]plantedName{
	"project":     {"session cwd (pi.project)", "Qproject", always},
	"section":     {"system message section name", "Qsection", always},
	"tool":        {"tool name (declaration, call, execution, result)", "Qtool", always},
	"description": {"declared tool description", "Qdescription", always},
	"api":         {"assistant api", "Qapi", never},
	"provider":    {"assistant provider", "Qprovider", always},
	"model":       {"assistant model", "Qmodel", always},
	"respmodel":   {"assistant responseModel", "Qrespmodel", always},
	"stop":        {"assistant stopReason", "Qstop", always},
	"rawstop":     {"assistant rawStopReason", "Qrawstop", always},
	"msglevel":    {"assistant thinkingLevel", "Qmsglevel", always},
	"level":       {"thinking_level_changed level", "Qlevel", always},
	"entry":       {"entry_appended customType", "Qentry", always},
	"evtype":      {"unknown record type", "Qevtype", always},
	"extpath":     {"extension_error extensionPath", "Qextpath", always},
	"extevent":    {"extension_error event", "Qextevent", always},
	"reason":      {"compaction reason", "Qreason", always},
	"source":      {"summarization retry source", "Qsource", always},
	"mode":        {"subagent mode", "Qmode", always},
	"agent":       {"subagent agent", "Qagent", always},
	"subprov":     {"subagent message provider", "Qsubprov", always},
	"submodel":    {"subagent message model", "Qsubmodel", always},
	"subtool":     {"subagent tool name", "Qsubtool", always},
	"substop":     {"subagent stopReason", "Qsubstop", always},
	"block":       {"unknown content block type", "Qblock", captured},
	"mime":        {"image mimeType", "Qmime", captured},
	"role":        {"unknown message role", "Qrole", never}, // the mapper skips the message
}

// sessionNames are the named fields of a session file's entries.
var sessionNames = map[string]plantedName{
	"project":   {"header cwd (pi.project)", "Qsproject", always},
	"mcprov":    {"model_change provider", "Qmcprov", always},
	"mcmodel":   {"model_change modelId", "Qmcmodel", always},
	"level":     {"thinking_level_change thinkingLevel", "Qslevel", always},
	"api":       {"assistant api", "Qsapi", never},
	"provider":  {"assistant provider", "Qsprovider", always},
	"model":     {"assistant model", "Qsmodel", always},
	"tool":      {"tool call and result name", "Qstool", always},
	"stop":      {"assistant stopReason", "Qsstop", always},
	"kind":      {"usage kind", "Qkind", always},
	"uprov":     {"usage provider", "Quprov", always},
	"umodel":    {"usage model", "Qumodel", always},
	"custom":    {"custom customType", "Qcustom", always},
	"cmsg":      {"custom_message customType", "Qcmsg", always},
	"entrytype": {"unknown entry type", "Qentrytype", always},
	"role":      {"unknown message role", "Qrole", always},
}

// namedStream is a Pi 1.6-shaped json-mode run with a key in every name.
func namedStream(t *testing.T) []byte {
	n := func(k string) string { return streamNames[k].value() }
	usage := map[string]any{"input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 2, "totalTokens": 18, "cost": map[string]any{"total": 0.25}}
	assistant := func(stop string, content []any) map[string]any {
		return map[string]any{"role": "assistant", "api": n("api"), "provider": n("provider"), "model": n("model"),
			"responseModel": n("respmodel"), "responseId": "resp-1", "stopReason": stop, "rawStopReason": n("rawstop"),
			"thinkingLevel": n("msglevel"), "usage": usage, "durationMs": 20, "timestamp": 1795990000002, "content": content}
	}
	child := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Task: count"}}, "timestamp": 1795990000010},
		map[string]any{"role": "assistant", "provider": n("subprov"), "model": n("submodel"), "usage": usage, "stopReason": "toolUse", "timestamp": 1795990000011,
			"content": []any{map[string]any{"type": "toolCall", "id": "cc1", "name": n("subtool"), "arguments": map[string]any{}}}},
		map[string]any{"role": "toolResult", "toolCallId": "cc1", "toolName": n("subtool"), "content": []any{map[string]any{"type": "text", "text": "ok"}}, "isError": false, "timestamp": 1795990000012},
		map[string]any{"role": "assistant", "provider": n("subprov"), "model": n("submodel"), "usage": usage, "stopReason": n("substop"), "timestamp": 1795990000013,
			"content": []any{map[string]any{"type": "text", "text": "3"}}},
	}
	subResult := map[string]any{"content": []any{map[string]any{"type": "text", "text": "3"}}, "details": map[string]any{
		"mode": n("mode"), "results": []any{map[string]any{"agent": n("agent"), "agentSource": "user", "task": "count", "status": "completed", "exitCode": 0,
			"messages": child, "usage": map[string]any{"input": 20, "output": 10, "cost": 0.5, "turns": 2},
			"model": n("subprov") + "/" + n("submodel"), "stopReason": n("substop")}}}}
	records := []any{
		map[string]any{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/w/" + n("project")},
		map[string]any{"type": "agent_start"},
		map[string]any{"type": "turn_start"},
		map[string]any{"type": "message_end", "message": map[string]any{"role": "system", "content": "", "timestamp": 1795990000000,
			"sections": map[string]any{n("section"): "You are a coding agent."},
			"tools":    []any{map[string]any{"name": n("tool"), "description": n("description")}}}},
		map[string]any{"type": "message_end", "message": map[string]any{"role": "user", "timestamp": 1795990000001, "content": []any{
			map[string]any{"type": "text", "text": "hi"}, map[string]any{"type": n("block"), "text": "x"},
			map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": n("mime")}}}},
		map[string]any{"type": "message_end", "message": map[string]any{"role": n("role"), "content": "x", "timestamp": 1795990000001}},
		map[string]any{"type": "message_start", "message": assistant("pending", []any{})},
		map[string]any{"type": "message_update", "usage": usage, "assistantMessageEvent": map[string]any{"type": "toolcall_start", "contentIndex": 0, "id": "c1", "toolName": n("tool")}},
		map[string]any{"type": "message_end", "message": assistant("toolUse", []any{
			map[string]any{"type": "toolCall", "id": "c1", "name": n("tool"), "arguments": map[string]any{}},
			map[string]any{"type": "toolCall", "id": "c2", "name": "subagent", "arguments": map[string]any{}}})},
		map[string]any{"type": "tool_execution_start", "toolCallId": "c1", "toolName": n("tool"), "args": map[string]any{}},
		map[string]any{"type": "tool_execution_update", "toolCallId": "c1", "toolName": n("tool"), "args": map[string]any{}, "partialResult": map[string]any{}},
		map[string]any{"type": "tool_execution_end", "toolCallId": "c1", "toolName": n("tool"), "isError": false, "durationMs": 5, "result": map[string]any{"content": []any{}}},
		map[string]any{"type": "tool_execution_start", "toolCallId": "c2", "toolName": "subagent", "args": map[string]any{}},
		map[string]any{"type": "tool_execution_end", "toolCallId": "c2", "toolName": "subagent", "isError": false, "durationMs": 9, "result": subResult},
		map[string]any{"type": "message_end", "message": map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": n("tool"), "content": []any{}, "isError": false, "timestamp": 1795990000020}},
		map[string]any{"type": "turn_end"},
		map[string]any{"type": "thinking_level_changed", "level": n("level")},
		map[string]any{"type": "entry_appended", "entry": map[string]any{"type": "custom", "customType": n("entry")}},
		map[string]any{"type": n("evtype")},
		map[string]any{"type": "extension_error", "extensionPath": "/ext/" + n("extpath") + ".ts", "event": n("extevent"), "error": "boom"},
		map[string]any{"type": "turn_start"},
		map[string]any{"type": "message_end", "message": assistant(n("stop"), []any{map[string]any{"type": "text", "text": "done"}})},
		map[string]any{"type": "turn_end"},
		map[string]any{"type": "compaction_start", "reason": n("reason")},
		map[string]any{"type": "summarization_retry_scheduled", "attempt": 1, "maxAttempts": 2, "delayMs": 5, "errorMessage": "overloaded", "source": n("source")},
		map[string]any{"type": "compaction_end", "reason": n("reason"), "result": map[string]any{"summary": "s", "tokensBefore": 100}, "aborted": false, "willRetry": false},
		map[string]any{"type": "agent_end", "willRetry": false},
		map[string]any{"type": "agent_settled", "aborted": false},
	}
	return jsonLines(t, records)
}

// namedSession is a session file with a key in every name its entries
// carry.
func namedSession(t *testing.T) []byte {
	n := func(k string) string { return sessionNames[k].value() }
	usage := map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": map[string]any{"total": 0.25}}
	id := 0
	parent := any(nil)
	entry := func(typ string, at string, fields map[string]any) map[string]any {
		id++
		e := map[string]any{"type": typ, "id": "e" + string(rune('a'+id)), "parentId": parent, "timestamp": "2026-12-01T06:26:" + at + "Z"}
		parent = e["id"]
		for k, v := range fields {
			e[k] = v
		}
		return e
	}
	assistant := func(stop string, content []any) map[string]any {
		return map[string]any{"role": "assistant", "api": n("api"), "provider": n("provider"), "model": n("model"),
			"usage": usage, "stopReason": stop, "timestamp": 1796106368600, "content": content}
	}
	records := []any{
		map[string]any{"type": "session", "version": 3, "id": "01a23048-35ea-77e8-871f-37b6a74da4b1", "timestamp": "2026-12-01T06:26:08.490Z", "cwd": "/w/" + n("project")},
		entry("model_change", "08.500", map[string]any{"provider": n("mcprov"), "modelId": n("mcmodel")}),
		entry("thinking_level_change", "08.501", map[string]any{"thinkingLevel": n("level")}),
		entry("message", "08.550", map[string]any{"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}, "timestamp": 1796106368550}}),
		entry("message", "08.600", map[string]any{"message": assistant("toolUse", []any{map[string]any{"type": "toolCall", "id": "c1", "name": n("tool"), "arguments": map[string]any{}}})}),
		entry("message", "08.650", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": n("tool"), "content": []any{}, "isError": false, "timestamp": 1796106368650}}),
		entry("usage", "08.660", map[string]any{"kind": n("kind"), "provider": n("uprov"), "model": n("umodel"), "usage": usage}),
		entry("custom", "08.670", map[string]any{"customType": n("custom"), "data": map[string]any{}}),
		entry("custom_message", "08.680", map[string]any{"customType": n("cmsg"), "content": "note", "display": true}),
		entry(n("entrytype"), "08.690", nil),
		entry("message", "08.700", map[string]any{"message": map[string]any{"role": n("role"), "content": "x", "timestamp": 1796106368700}}),
		entry("message", "08.750", map[string]any{"message": assistant(n("stop"), []any{map[string]any{"type": "text", "text": "done"}})}),
	}
	return jsonLines(t, records)
}

func jsonLines(t *testing.T, records []any) []byte {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TestNamesRedactedEverywhere: a key planted in any name a Pi record
// carries (a model, a provider, a tool, an agent, a usage kind, a thinking
// level, …), in a stream and in a session file, reaches no span name,
// attribute, event or link, no metric label and no log record, in both
// conventions modes, with and without content capture, through the file
// and the console exporters.
func TestNamesRedactedEverywhere(t *testing.T) {
	for _, in := range []struct {
		name  string
		data  []byte
		names map[string]plantedName
	}{
		{"stream", namedStream(t), streamNames},
		{"session", namedSession(t), sessionNames},
	} {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range in.names {
				if !strings.Contains(string(in.data), `"`+p.value()) && !strings.Contains(string(in.data), "/"+p.value()) {
					t.Fatalf("the input does not carry %s", p.field)
				}
			}
			file := streamFile(t, in.data)
			for _, env := range []map[string]string{nil, {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}} {
				for _, capture := range []bool{false, true} {
					mode := "v1.41"
					if env != nil {
						mode = "latest"
					}
					if capture {
						mode += " --capture-content"
					}
					dir := t.TempDir()
					outs := map[string]string{
						"traces":  filepath.Join(dir, "traces.jsonl"),
						"metrics": filepath.Join(dir, "metrics.jsonl"),
						"logs":    filepath.Join(dir, "logs.jsonl"),
					}
					args := []string{"replay", "--traces-file", outs["traces"], "--metrics-file", outs["metrics"], "--logs-file", outs["logs"]}
					if capture {
						args = append(args, "--capture-content")
					}
					code, stdout, stderr := mainWith(env, append(args, file)...)
					if code != 0 {
						t.Fatalf("%s: exit %d: %s", mode, code, stderr)
					}
					got := map[string]string{"stdout": stdout, "stderr": stderr}
					for k, f := range outs {
						b, err := os.ReadFile(f)
						if err != nil {
							t.Fatal(err)
						}
						got[k] = string(b)
					}
					for _, want := range []string{`"pi.cost"`, `"gen_ai.request.model","value":{"stringValue":"_OTHER"}`} {
						if !strings.Contains(got["metrics"], want) {
							t.Errorf("%s: the metrics lack %s: the test would prove little", mode, want)
						}
					}
					if !strings.Contains(got["logs"], `"eventName"`) {
						t.Errorf("%s: no log records: the test would prove little", mode)
					}
					assertNoKey(t, mode, got)
					for _, p := range in.names {
						want := p.reach == always || p.reach == captured && capture
						if reached := strings.Contains(got["traces"], p.marker()); reached != want {
							t.Errorf("%s: %s reached the traces redacted: %v, want %v", mode, p.field, reached, want)
						}
					}
				}
			}
			// The console exporters print names too.
			code, stdout, stderr := mainWith(nil, "replay", "--traces-exporter", "console", "--metrics-exporter", "console",
				"--logs-exporter", "console", file)
			if code != 0 {
				t.Fatalf("console: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout+stderr, "[REDACTED:anthropic-key]") {
				t.Error("console: no redacted name printed: the test would prove little")
			}
			assertNoKey(t, "console", map[string]string{"stdout": stdout, "stderr": stderr})
		})
	}
}

// assertNoKey fails for every output that holds the planted key, and
// shows where.
func assertNoKey(t *testing.T, mode string, outs map[string]string) {
	t.Helper()
	for name, s := range outs {
		for i, n := 0, 0; n < 5; n++ {
			j := strings.Index(s[i:], keyBody)
			if j < 0 {
				break
			}
			at := i + j
			t.Errorf("%s: %s holds the key: …%s…", mode, name, s[max(0, at-160):min(len(s), at+40)])
			i = at + len(keyBody)
		}
	}
}
