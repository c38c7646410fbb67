package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// FuzzDecode feeds arbitrary files to a FileMapper. Whatever the bytes, it must
// not panic, must end every span it starts, must count every line, must not
// commit past the input, and must give the same ids when run twice: once
// line by line, once decoded ahead on another goroutine (Predecode).
//
//	go test ./internal/session -run '^$' -fuzz FuzzDecode -fuzzminimizetime 2s
//
// (minimising a multi-kilobyte seed at the default 60s takes a whole run).
func FuzzDecode(f *testing.F) {
	for _, v := range []string{"pi-1.6.0", "pi-1.0.3", "pi-0.73.x"} {
		files, _ := filepath.Glob(filepath.Join(sessionsDir(v), "*.jsonl"))
		for _, p := range files {
			if bytes.HasSuffix([]byte(p), []byte(".stream.jsonl")) || bytes.HasSuffix([]byte(p), []byte(".in.jsonl")) {
				continue
			}
			b, err := os.ReadFile(p)
			if err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	b := newFile(map[string]any{"version": nil, "provider": "p", "modelId": "m"})
	b.user("go")
	b.assistant("toolUse", usage{1, 1}, "bash:c1")
	f.Add(b.bytes())
	f.Add([]byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:00:00.000Z","cwd":"C:\\x"}` + "\n" +
		`{"type":"message","id":"a","parentId":"zz","timestamp":"bad","message":{"role":"user","content":[{"type":"image"}],"timestamp":-5}}` + "\n" +
		`{"type":"compaction","id":"b","parentId":"a","timestamp":"2026-11-30T09:00:01.000Z","usage":{"input":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		run := func(feed func(*FileMapper, []byte)) ([]string, Stats) {
			rec := tracetest.NewSpanRecorder()
			ids := spanid.NewGenerator(nil)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
			tr := New(Config{TracerProvider: tp})
			feed(tr, in)
			if c := tr.Committed(); c < 0 || c > int64(len(in)) {
				t.Fatalf("committed %d of %d bytes", c, len(in))
			}
			tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
			var out []string
			for _, s := range rec.Started() {
				if s.EndTime().IsZero() {
					t.Fatalf("span %s never ended", s.Name())
				}
				out = append(out, s.Name()+s.SpanContext().SpanID().String())
			}
			return out, tr.Stats()
		}
		a, st := run(feed)
		if want := int64(bytes.Count(in, []byte("\n"))); st.Lines != want {
			t.Fatalf("counted %d lines, fed %d", st.Lines, want)
		}
		// A repaired line holds several records: each counts.
		if st.Repaired == 0 && st.Entries+st.Damaged > st.Lines {
			t.Fatalf("stats %+v", st)
		}
		c, st2 := run(feedPredecoded)
		if st2 != st {
			t.Fatalf("stats %+v, then predecoded %+v", st, st2)
		}
		if len(a) != len(c) {
			t.Fatalf("%d spans, then %d", len(a), len(c))
		}
		for i := range a {
			if a[i] != c[i] {
				t.Fatalf("span %d: %s then %s", i, a[i], c[i])
			}
		}
	})
}

// FuzzFastDecodeMatches checks the fast path for message entries against
// encoding/json: the same entry, or the same refusal, for any line.
func FuzzFastDecodeMatches(f *testing.F) {
	dirs := []string{sessionsDir("pi-1.6.0"), sessionsDir("pi-0.73.x"), corpusDir()}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, p := range files {
			if bytes.HasSuffix([]byte(p), []byte(".stream.jsonl")) || bytes.HasSuffix([]byte(p), []byte(".in.jsonl")) {
				continue
			}
			b, _ := os.ReadFile(p)
			for _, line := range bytes.Split(b, []byte("\n")) {
				if len(line) > 0 && len(line) < 8<<10 {
					f.Add(line)
				}
			}
		}
	}
	f.Add([]byte(`{"type":"message","id":"a\"b","parentId":"p\u0041","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n"}],"stopReason":"toolUse"}}`))
	// parentId read where the scan found it: after the message, twice, in
	// another case, absent.
	f.Add([]byte(`{"type":"message","id":"a","message":{"role":"user","content":"h\u00e9"},"parentId":"p"}`))
	f.Add([]byte(`{"type":"message","id":"a","parentId":"p","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"x"}]}}`))
	f.Add([]byte(`{"type":"message","id":"a","ParentId":"p","message":{"role":"user","content":"x"}}`))
	f.Add([]byte(`{"type":"message","id":"a","timestamp":"t","message":{"role":"toolResult","toolCallId":"c"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		d := newDecoder(false, false)
		fast, ferr := d.decode(line)
		slow, serr := decodeEntry(line)
		switch {
		case ferr == nil && serr != nil:
			t.Fatalf("fast accepted what encoding/json refuses (%v)", serr)
		case ferr != nil && serr == nil && utf8.Valid(line):
			// Only invalid UTF-8, which encoding/json replaces, is a line
			// the fast path alone calls damaged.
			t.Fatalf("fast refused a valid line: %v", ferr)
		case ferr != nil || serr != nil:
			return
		}
		sum := func(e *entry) string {
			s := fmt.Sprintf("%s|%s|%v|%s", e.Type, e.ID, e.ParentID != nil, e.Timestamp)
			if e.ParentID != nil {
				s += "|" + *e.ParentID
			}
			if m := e.msg; m != nil {
				s += fmt.Sprintf("|%s|%s|%s|%s|%v|%s|%v|%v|%s|%v|%d", m.Role, m.StopReason, m.Model, m.ErrorMessage, m.Timestamp, m.ToolCallID, m.IsError, m.callIDs, m.Provider, m.DurationMs != nil, m.TextChars)
				if m.Usage != nil {
					s += fmt.Sprintf("|%+v", *m.Usage)
				}
			}
			return s
		}
		if a, b := sum(fast), sum(slow); a != b {
			t.Fatalf("fast %s\nslow %s", a, b)
		}
	})
}
