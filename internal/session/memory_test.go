package session

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// prose is text to fill huge messages with: escapes and characters
// outside ASCII, so that counting it is not counting bytes.
const prose = "A line of the answer, with \"quotes\", a tab\t, é and 😀.\n"

// messageLine encodes a message entry. parentLast writes parentId after
// the message, as Pi does not: only the encoding/json decoder reads that.
func messageLine(t *testing.T, id, parent string, msg map[string]any, parentLast bool) []byte {
	t.Helper()
	m, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if parentLast {
		return fmt.Appendf(nil, `{"type":"message","id":%q,"timestamp":"2026-11-30T09:00:01.000Z","message":%s,"parentId":%q}`, id, m, parent)
	}
	return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-11-30T09:00:01.000Z","message":%s}`, id, parent, m)
}

// Without content capture a decoded message keeps what counts and ids
// need, and none of its content: it is held until its run is traced, and
// a prompt, an answer or an image can be hundreds of megabytes.
func TestDecodeKeepsNoContentWithoutCapture(t *testing.T) {
	text := strings.Repeat(prose, 3)
	img := map[string]any{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
	for _, c := range []struct {
		name   string
		msg    map[string]any
		chars  int
		images int
		calls  []string
	}{
		{name: "prompt", msg: map[string]any{"role": "user", "content": text}, chars: utf8.RuneCountInString(text)},
		{name: "prompt blocks", msg: map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": text}, img, img,
		}}, chars: utf8.RuneCountInString(text), images: 2},
		{name: "answer", msg: map[string]any{"role": "assistant", "stopReason": "toolUse", "content": []any{
			map[string]any{"type": "thinking", "thinking": text},
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "toolCall", "id": "c1", "name": "write", "arguments": map[string]any{"content": text}},
		}}, calls: []string{"c1"}},
		{name: "tool result", msg: map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "write", "content": []any{
			map[string]any{"type": "text", "text": text},
		}}},
		{name: "extension message", msg: map[string]any{"role": "custom", "customType": "ext", "content": []any{
			map[string]any{"type": "text", "text": text}, img,
		}}, images: 1},
	} {
		for _, slow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s slow=%v", c.name, slow), func(t *testing.T) {
				line := messageLine(t, "m1", "p0", c.msg, slow)
				for _, capture := range []bool{false, true} {
					e, err := newDecoder(capture, false).decode(line)
					if err != nil {
						t.Fatal(err)
					}
					m := e.msg
					if m.images != c.images || !slices.Equal(m.callIDs, c.calls) {
						t.Errorf("capture=%v: %d images, calls %q; want %d, %q", capture, m.images, m.callIDs, c.images, c.calls)
					}
					if capture {
						if len(m.Content) == 0 || len(m.Raw) == 0 {
							t.Error("content capture without the content")
						}
						continue
					}
					if kept := len(e.RawMsg) + len(e.Content) + len(m.Raw) + len(m.Content); kept != 0 {
						t.Errorf("kept %d bytes of raw JSON without content capture", kept)
					}
					if m.TextChars != c.chars {
						t.Errorf("%d characters, want %d", m.TextChars, c.chars)
					}
				}
			})
		}
	}
	e, err := newDecoder(false, false).decode([]byte(`{"type":"custom_message","id":"x","parentId":null,"timestamp":"2026-11-30T09:00:01.000Z","customType":"ext","content":[{"type":"image","data":"aGVsbG8="}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Content != nil || e.images != 1 {
		t.Errorf("custom_message: content %q, %d images", e.Content, e.images)
	}
}

// A run of huge messages costs the heap what its counts and ids take
// while it is held, not the messages: the lines are the reader's, and
// gone once fed. (Heap, not time: a generous bound, far below the lines.)
func TestHugeMessagesAreNotHeld(t *testing.T) {
	const size = 8 << 20
	text := strings.Repeat(prose, size/len(prose))
	chars := utf8.RuneCountInString(text)
	rec := tracetest.NewSpanRecorder()
	tr := New(Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	base := heapInUse()
	lines := hugeRun(t, text)
	fed, off := 0, int64(0)
	for i := range lines {
		fed += len(lines[i])
		tr.Line(off, lines[i])
		off += int64(len(lines[i])) + 1
		lines[i] = nil // the reader's buffer, reused for the next line
	}
	held := heapInUse() - base
	runtime.KeepAlive(text) // in both measures
	if tr.cur == nil || len(tr.cur.entries) != 3 {
		t.Fatal("the run is not open with its three messages: the test would prove nothing")
	}
	if held > 2<<20 {
		t.Errorf("holding a run of %d MB of messages takes %.1f MB of heap", fed>>20, float64(held)/(1<<20))
	}

	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	r := forest(t, rec)[0]
	if v := treeEventAttr(r, "pi.user_message", "pi.message.chars"); v != fmt.Sprint(chars) {
		t.Errorf("a prompt of %s characters, want %d", v, chars)
	}
	if v, _ := eventAttr(r, "pi.user_images", "pi.message.images"); v != "1" {
		t.Errorf("%s images, want 1", v)
	}
}

// treeEventAttr is eventAttr of the first span below n with the event.
func treeEventAttr(n *node, event, key string) string {
	if v, ok := eventAttr(n, event, key); ok {
		return v
	}
	for _, c := range n.children {
		if v := treeEventAttr(c, event, key); v != "" {
			return v
		}
	}
	return ""
}

// hugeRun is a session file of a run that is not over: a prompt with an
// image, a tool call, and an answer written with parentId last, for the
// encoding/json decoder.
func hugeRun(t *testing.T, text string) [][]byte {
	return [][]byte{
		[]byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/p"}`),
		messageLine(t, "m1", "", map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "image", "data": strings.Repeat("QUJD", len(text)/4), "mimeType": "image/png"},
		}}, false),
		messageLine(t, "m2", "m1", map[string]any{"role": "assistant", "stopReason": "toolUse", "content": []any{
			map[string]any{"type": "thinking", "thinking": text},
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "toolCall", "id": "c1", "name": "write", "arguments": map[string]any{"content": text}},
		}}, false),
		messageLine(t, "m3", "m2", map[string]any{"role": "assistant", "stopReason": "stop", "content": []any{
			map[string]any{"type": "text", "text": text},
		}}, true),
	}
}

// heapInUse is the heap's live bytes, once collected. Twice: what pools
// hold (json.Marshal's buffers, here as large as the lines) lasts one
// collection more.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// pi.message.chars counts a prompt's characters with content capture
// (counted from the content kept) and without (counted at decode).
func TestPromptCharsWithAndWithoutCapture(t *testing.T) {
	text := strings.Repeat(prose, 4)
	n := utf8.RuneCountInString(text)
	block := map[string]any{"type": "text", "text": text}
	for _, c := range []struct {
		content any
		chars   int
	}{{text, n}, {[]any{block, block}, 2 * n}} {
		f := newFile(nil)
		f.message(map[string]any{"role": "user", "content": c.content, "timestamp": ms(f.now.Add(90 * time.Millisecond))})
		f.assistant("stop", usage{10, 1})
		for _, cfg := range []Config{{}, {Content: plain{}}} {
			r := runs(t, traceBytes(t, f.bytes(), cfg), 1)[0]
			if v := treeEventAttr(r, "pi.user_message", "pi.message.chars"); v != fmt.Sprint(c.chars) {
				t.Errorf("capture=%v: %s characters, want %d", cfg.Content != nil, v, c.chars)
			}
		}
	}
}
