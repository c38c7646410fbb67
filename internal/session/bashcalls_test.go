package session

import (
	"reflect"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Config.BashCalls gets each assistant message's bash calls, read by the
// line's own decoding whether the fast decoder or encoding/json reads the
// line, through Line and Predecode alike; the entry keeps no command.
func TestBashCallsFromDecoding(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"go"}}`,
		// Pi's shape: the fast decoder.
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make"}},{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x"}}]}}`,
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[]}}`,
		// parentId after the message: encoding/json reads the line.
		`{"type":"message","id":"a2","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[` +
			`{"type":"toolCall","id":"c3","name":"bash","arguments":{"command":"go vet"}}]},"parentId":"r1"}`,
		// Not assistant messages: no calls.
		`{"type":"message","id":"u2","parentId":"a2","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"user","content":[` +
			`{"type":"toolCall","id":"c9","name":"bash","arguments":{"command":"x"}}]}}`,
	}
	want := [][]event.BashCall{{{ID: "c1", Command: "make"}}, {{ID: "c3", Command: "go vet"}}}
	for _, ahead := range []bool{false, true} {
		var got [][]event.BashCall
		var fm *FileMapper
		fm = New(Config{
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(spanid.NewGenerator(nil))),
			BashCalls: func(calls []event.BashCall) {
				got = append(got, calls)
				// The file's run names the call's span already.
				if _, ok := fm.ToolContext(calls[0].ID); !ok {
					t.Errorf("no span for %s", calls[0].ID)
				}
			},
		})
		var off int64
		pre := fm.Predecode()
		for _, l := range lines {
			if ahead {
				pre(off, []byte(l))()
			} else {
				fm.Line(off, []byte(l))
			}
			off += int64(len(l)) + 1
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ahead %v: calls %q, want %q", ahead, got, want)
		}
		for _, e := range fm.cur.entries {
			if e.msg != nil && e.msg.bashCalls != nil {
				t.Errorf("entry %s keeps its commands", e.ID)
			}
		}
		fm.Close(agentmap.Ending{Reason: vocab.EndEOF})
	}
	// Without BashCalls, the decoder reads none.
	d := newDecoder(false, false)
	if e, err := d.decode([]byte(lines[2])); err != nil || e.msg.bashCalls != nil {
		t.Errorf("read %q, %v without being asked", e.msg.bashCalls, err)
	}
}
