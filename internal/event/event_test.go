package event

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeKinds(t *testing.T) {
	for _, tc := range []struct {
		name, rec string
		want      error
		typ       string
	}{
		{"object", `{"type":"agent_start"}`, nil, TypeAgentStart},
		{"type not first", `{"x":1,"type":"turn_start"}`, nil, TypeTurnStart},
		{"escaped type", `{"type":"agent\u005fend"}`, nil, TypeAgentEnd},
		{"spaces", ` { "type" : "agent_settled" } `, nil, TypeAgentSettled},
		{"future type", `{"type":"hologram_start","x":[1,2]}`, nil, "hologram_start"},
		{"malformed", `{"type":"agent_start"`, ErrInvalidJSON, ""},
		{"array", `[1,2]`, ErrNotObject, ""},
		{"string", `"agent_start"`, ErrNotObject, ""},
		{"no type", `{"kind":"x"}`, ErrNoType, ""},
		{"type not string", `{"type":3}`, ErrNoType, ""},
		{"bad utf8", "{\"type\":\"x\xff\"}", ErrInvalidUTF8, ""},
		{"empty", ``, ErrInvalidJSON, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Decode([]byte(tc.rec), Options{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if ev.Type != tc.typ {
				t.Fatalf("type %q, want %q", ev.Type, tc.typ)
			}
		})
	}
}

func TestDecodeFieldsOfAFutureShapeKeepTheRest(t *testing.T) {
	// A later Pi that turns durationMs into an object still marks the
	// tool's end; the mapper must not lose the lifecycle step, nor the
	// tool it ends.
	ev, err := Decode([]byte(`{"type":"tool_execution_end","toolCallId":"a","durationMs":{"ms":3}}`), Options{})
	if !errors.Is(err, ErrFieldDropped) || ev.Type != TypeToolExecutionEnd || ev.ToolCallID != "a" || ev.DurationMs != nil {
		t.Fatalf("ev %+v err %v", ev, err)
	}
}

func TestMessageUpdateIsLazy(t *testing.T) {
	rec := `{"type":"message_update","usage":{"input":1},"assistantMessageEvent":{"type":"text_delta","contentIndex":2,"delta":"secret"}}`
	ev, err := Decode([]byte(rec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ame := ev.AssistantMessageEvent; ame == nil || ame.Type != "text_delta" || ame.ContentIndex != 2 || ame.Delta != "" {
		t.Fatalf("%+v", ev.AssistantMessageEvent)
	}
	if ev.Usage != nil {
		t.Fatal("usage decoded without need")
	}
	ev, _ = Decode([]byte(rec), Options{Content: true})
	if ev.AssistantMessageEvent.Delta != "secret" {
		t.Fatal("content mode lost the delta")
	}
	legacy := `{"type":"message_update","message":{"role":"assistant"},"assistantMessageEvent":{"type":"text_delta","contentIndex":0}}`
	ev, _ = Decode([]byte(legacy), Options{})
	if len(ev.RawMessage) == 0 {
		t.Fatal("legacy cumulative message not noticed")
	}
}

func TestMessageDecoded(t *testing.T) {
	rec := `{"type":"message_end","message":{"role":"assistant","model":"m","usage":{"input":3,"output":4,"cost":{"total":0.5}},"stopReason":"stop","durationMs":12,"timestamp":1795988654073}}`
	ev, err := Decode([]byte(rec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := ev.Message
	if m == nil || m.Model != "m" || m.Usage.Output != 4 || m.Usage.Cost.Total != 0.5 || *m.DurationMs != 12 || int64(m.Timestamp) != 1795988654073 {
		t.Fatalf("%+v", m)
	}
	if !strings.Contains(string(m.Raw), `"durationMs":12`) {
		t.Fatal("raw message lost")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"agent_start"}`, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}`, `{"type":"message_end","message":{"role":"assistant","usage":{}}}`, `[]`, `{`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, content := range []bool{false, true} {
			ev, err := Decode(b, Options{Content: content})
			if err == nil && ev.Type == "" {
				// An empty type string is legal JSON and is passed on.
				if !strings.Contains(string(b), `""`) && !strings.Contains(string(b), `\u`) {
					t.Fatalf("no error and no type for %q", b)
				}
			}
		}
	})
}
