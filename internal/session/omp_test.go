package session

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// oh-my-pi 18.2.3, captured against the fake model: its session file (a
// title line before the header, model_change as "provider/model") and its
// stream (advisor_cost_changed after the header, a run ending at agent_end
// with isTerminal and no agent_settled) trace as Pi's do: one settled run,
// the session's id and project on it, the same cost and tokens both ways.
func TestOhMyPi(t *testing.T) {
	file := runs(t, traceBytes(t, readCapture(t, "omp-18.2.3", "bash-tool.jsonl"), Config{}), 1)[0]
	if got := file.str("gen_ai.conversation.id"); got != "01a244b3-a5bf-7517-b3db-648564ce45d0" {
		t.Errorf("gen_ai.conversation.id %q, want the header's", got)
	}
	if got := file.str(string(vocab.ProjectKey)); got != "proj" {
		t.Errorf("pi.project %q", got)
	}
	if p, _ := eventAttr(file, vocab.EventModelChange, "gen_ai.provider.name"); p != "fakellm" {
		t.Errorf("model_change provider %q, want fakellm", p)
	}
	if m, _ := eventAttr(file, vocab.EventModelChange, "gen_ai.request.model"); m != "fake-model" {
		t.Errorf("model_change model %q, want fake-model", m)
	}
	streams := traceStream(t, readCapture(t, "omp-18.2.3", "bash-tool.stream.jsonl"))
	if len(streams) != 1 {
		t.Fatalf("%d roots from the stream, want 1", len(streams))
	}
	stream := streams[0]
	for _, r := range []*node{file, stream} {
		if got := r.str(string(vocab.EndReasonKey)); got != string(vocab.EndSettled) {
			t.Errorf("end reason %q, want settled", got)
		}
	}
	for _, key := range []string{string(vocab.CostTotalKey), "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		f, _ := file.attr(key)
		s, _ := stream.attr(key)
		if f != s || f.String() == "" {
			t.Errorf("%s: file %v, stream %v", key, f.String(), s.String())
		}
	}
	if got, want := stream.shape(), file.shape(); got != want {
		t.Errorf("the stream's trace\n%s\nthe file's\n%s", got, want)
	}
}

// oh-my-pi times a call with duration, ttft and completedAt, not Pi's
// durationMs: a chat span from its session file lasts the message's
// duration and ends at completedAt, and both ways record its ttft as the
// time to first chunk.
func TestOhMyPiChatTiming(t *testing.T) {
	b := readCapture(t, "omp-18.2.3", "bash-tool.jsonl")
	var want []event.Message
	for line := range bytes.Lines(b) {
		var e struct{ Message *event.Message }
		if json.Unmarshal(line, &e) == nil && e.Message != nil && e.Message.Role == "assistant" {
			want = append(want, *e.Message)
		}
	}
	if len(want) != 2 {
		t.Fatalf("%d assistant messages in the capture, want 2", len(want))
	}
	file := runs(t, traceBytes(t, b, Config{}), 1)[0]
	stream := traceStream(t, readCapture(t, "omp-18.2.3", "bash-tool.stream.jsonl"))[0]
	for way, root := range map[string]*node{"file": file, "stream": stream} {
		chats := root.find("chat fake-model")
		if len(chats) != len(want) {
			t.Fatalf("%s: %d chat spans, want %d", way, len(chats), len(want))
		}
		for i, c := range chats {
			m := want[i]
			end := time.UnixMilli(int64(m.CompletedAt))
			if got := c.s.EndTime(); !got.Equal(end) {
				t.Errorf("%s chat %d ends %v, want completedAt %v", way, i, got, end)
			}
			if got, ok := c.attr("gen_ai.response.time_to_first_chunk"); !ok || math.Abs(got.AsFloat64()-*m.TTFT/1000) > 1e-9 {
				t.Errorf("%s chat %d: time to first chunk %v, want ttft %v ms", way, i, got.AsFloat64(), *m.TTFT)
			}
			if way != "file" {
				continue
			}
			d := c.s.EndTime().Sub(c.s.StartTime())
			if math.Abs(d.Seconds()*1000-*m.Duration) > 1e-3 {
				t.Errorf("file chat %d lasts %v, want duration %v ms", i, d, *m.Duration)
			}
		}
	}
}

// oh-my-pi records the spend of a side call (a title, a summary) in a
// model_usage entry, where Pi writes a usage entry: it counts in the run's
// totals the same way, and is a pi.usage event of its purpose.
func TestOhMyPiModelUsage(t *testing.T) {
	b := readCapture(t, "omp-18.2.3", "bash-tool.jsonl")
	base := runs(t, traceBytes(t, b, Config{}), 1)[0]
	var last struct{ ID string }
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || last.ID == "" {
		t.Fatalf("last entry: %v", err)
	}
	// The shape of oh-my-pi 18.2.3's ModelUsageEntry.
	side := `{"type":"model_usage","id":"side0001","parentId":"` + last.ID + `","timestamp":"2026-12-05T05:35:55.000Z",` +
		`"purpose":"title","role":"smol","api":"openai-completions","provider":"fakellm","model":"fake-model",` +
		`"usage":{"input":500,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":520,` +
		`"cost":{"input":0.0015,"output":0.0003,"cacheRead":0,"cacheWrite":0,"total":0.0018}},"stopReason":"stop"}` + "\n"
	tr := traceBytes(t, append(bytes.Clone(b), side...), Config{})
	got := runs(t, tr, 1)[0]
	in := func(n *node, key string) float64 {
		v, ok := n.attr(key)
		if !ok {
			t.Fatalf("no %s on the root", key)
		}
		if v.Type() == attribute.FLOAT64 {
			return v.AsFloat64()
		}
		return float64(v.AsInt64())
	}
	if d := in(got, "gen_ai.usage.input_tokens") - in(base, "gen_ai.usage.input_tokens"); d != 500 {
		t.Errorf("input tokens grew by %v, want the side call's 500", d)
	}
	if d := in(got, "gen_ai.usage.output_tokens") - in(base, "gen_ai.usage.output_tokens"); d != 20 {
		t.Errorf("output tokens grew by %v, want 20", d)
	}
	key := string(vocab.CostTotalKey)
	if d := in(got, key) - in(base, key); math.Abs(d-0.0018) > 1e-12 {
		t.Errorf("cost grew by %v, want 0.0018", d)
	}
	if kind, _ := eventAttr(got, vocab.EventUsage, string(vocab.UsageKindKey)); kind != "title" {
		t.Errorf("pi.usage kind %q, want the purpose, title", kind)
	}
}
