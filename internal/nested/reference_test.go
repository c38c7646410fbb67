package nested

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
)

// reference is the decoder walker replaced: encoding/json throughout. The
// parser's logic is shared; the two must read well-typed input alike.
type reference struct{}

func (reference) toolResult(raw []byte) (toolResult, bool) {
	var tr toolResult
	return tr, json.Unmarshal(raw, &tr) == nil
}

func (reference) object(raw []byte) (map[string]json.RawMessage, bool) {
	var d map[string]json.RawMessage
	return d, json.Unmarshal(raw, &d) == nil
}

func (reference) array(raw []byte) ([]json.RawMessage, bool) {
	var list []json.RawMessage
	return list, json.Unmarshal(raw, &list) == nil
}

func (reference) entry(raw []byte, e *entry) error { return json.Unmarshal(raw, e) }

func (reference) message(raw []byte, m *message) (malformed, skip bool) {
	err := json.Unmarshal(raw, m)
	if err == nil {
		return false, false
	}
	var te *json.UnmarshalTypeError
	return true, !errors.As(err, &te)
}

func (reference) role(raw []byte) string {
	var m struct {
		Role string `json:"role"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	return m.Role
}

// UnmarshalJSON reads content as walker.message does: a content that is not
// a list is no block. Only the reference decodes messages with encoding/json.
func (b *blocks) UnmarshalJSON(raw []byte) error {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var list []block
	if json.Unmarshal(raw, &list) == nil {
		*b = list
	}
	return nil
}

func parseWith(dec decoder, b []byte, lim Limits) *Result {
	lim = lim.withDefaults()
	p := parser{lim: lim, dec: dec}
	r := p.result(b, 0)
	if r != nil {
		r.Dropped = p.dropped
	}
	return r
}

// describe renders what a Result holds, for comparison.
func describe(r *Result) string {
	if r == nil {
		return "<nil>\n"
	}
	s := fmt.Sprintf("mode=%q usage=%s calls=%d complete=%v\n", r.Mode, usageText(r.Usage), len(r.Calls), r.CallsComplete)
	for _, c := range r.Calls {
		s += fmt.Sprintf("call %s %s %s %s %q\n", c.ID, c.Name, c.Status, floatText(c.DurationMs), c.Error)
	}
	for _, run := range r.Runs {
		exit := "<nil>"
		if run.ExitCode != nil {
			exit = fmt.Sprint(*run.ExitCode)
		}
		s += fmt.Sprintf("run %q %q #%d exit=%s %q %q %q %q usage=%s %v..%v depth=%d items=%d\n", run.Agent, run.Task, run.Index, exit,
			run.StopReason, run.ErrorMessage, run.Model, run.Provider, usageText(&run.Usage), run.Start.UnixNano(), run.End.UnixNano(), run.Depth, len(run.Items))
		for _, it := range run.Items {
			s += fmt.Sprintf("  item %d %v..%v %s %q %q %q %q %q usage=%s calls=%d %q %q err=%v\n", it.Kind, it.Start.UnixNano(), it.End.UnixNano(),
				floatText(it.DurationMs), it.Model, it.Provider, it.ResponseModel, it.StopReason, it.ErrorMessage, usageText(it.Usage),
				it.ToolCalls, it.ToolName, it.ToolCallID, it.IsError)
			if it.Nested != nil {
				s += "  nested: " + describe(it.Nested)
			}
		}
	}
	return s
}

func usageText(u *event.Usage) string {
	if u == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *u)
}

func floatText(f *float64) string {
	if f == nil {
		return "<nil>"
	}
	return fmt.Sprint(*f)
}

// FuzzWalkerMatchesReference: on well-formed input both decoders read the
// same runs, items, times, usage and calls.
func FuzzWalkerMatchesReference(f *testing.F) {
	f.Add(result(map[string]any{"agent": "a", "exitCode": 1, "messages": []any{assistant(1, 1, 0.1, "stop"), toolMsg(3, 1, "bash", true)}}))
	f.Add([]byte(`{"Details":{"results":[{"AGENT":"x","messages":[{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"b\u0061sh"}],"usage":{"cost":{"total":1}}},{"role":"toolResult","toolCallId":"1","details":{"results":[{"type":"deep","messages":[]}]}}]}]},"usage":{"input":1},"nestedCalls":{"calls":[{"id":"x","status":"ok"}]}}`))
	f.Add([]byte(`{"details":{"agents":[{"messages":[{"role":"user","content":"hi"},{"role":"assistant","durationMs":null,"timestamp":5}]}],"mode":"chain"}}`))
	// Keys that fold across lengths: ſ for s, the Kelvin sign for k.
	f.Add([]byte(`{"uſage":{"input":3},"details":{"results":[{"agent":"a","meſsages":[{"role":"assistant","stopReaſon":"stop","usage":{"input":1,"cost":{"total":2}}}]}],"mode":"single"},"nestedCalls":{"calls":[]}}`))
	f.Add([]byte(`{"details":{"results":[{"tasK":"t","messages":[{"role":"user","content":"hi"}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		lim := Limits{MaxRuns: 16, MaxDepth: 4, MaxItems: 16, MaxCalls: 8, MaxBytes: 1 << 20}
		want, got := parseWith(reference{}, b, lim), parseWith(walker{}, b, lim)
		if want != nil && want.Dropped.Malformed > 0 || got != nil && got.Dropped.Malformed > 0 {
			return // fields of the wrong type: bounded and counted, read either way
		}
		if w, g := describe(want), describe(got); w != g {
			t.Fatalf("reference:\n%s\nwalker:\n%s", w, g)
		}
	})
}
