package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/mapper"
)

// FuzzDecode feeds arbitrary files to a Tracer. Whatever the bytes, it must
// not panic, must end every span it starts, must count every line, must not
// commit past the input, and must give the same ids when run twice.
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
		run := func() ([]string, Stats) {
			rec := tracetest.NewSpanRecorder()
			ids := &IDs{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
			tr := New(Config{TracerProvider: tp, IDs: ids})
			feed(tr, in)
			if c := tr.Committed(); c < 0 || c > int64(len(in)) {
				t.Fatalf("committed %d of %d bytes", c, len(in))
			}
			tr.Close(mapper.Ending{Reason: mapper.EndEOF})
			var out []string
			for _, s := range rec.Started() {
				if s.EndTime().IsZero() {
					t.Fatalf("span %s never ended", s.Name())
				}
				out = append(out, s.Name()+s.SpanContext().SpanID().String())
			}
			return out, tr.Stats()
		}
		a, st := run()
		if want := int64(bytes.Count(in, []byte("\n"))); st.Lines != want {
			t.Fatalf("counted %d lines, fed %d", st.Lines, want)
		}
		if st.Entries+st.Damaged > st.Lines {
			t.Fatalf("stats %+v", st)
		}
		c, _ := run()
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
