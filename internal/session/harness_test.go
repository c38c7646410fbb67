package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// traced is the outcome of tracing one input.
type traced struct {
	roots  []*node
	tracer *FileMapper
}

// traceBytes feeds a session file to a FileMapper, line by line, and closes it.
func traceBytes(t *testing.T, b []byte, cfg Config) traced {
	t.Helper()
	rec, tr := record(b, cfg, feed)
	return traced{roots: forest(t, rec), tracer: tr}
}

// from traces the runs that begin at or after offset off (a follower
// restarted at its place) and begin at or after since.
func from(off int64, since time.Time) func(*Run) {
	return func(r *Run) {
		if r.Off >= off && !r.Start.Before(since) {
			r.Trace(false)
		}
	}
}

// record traces b, given to a FileMapper by feed, into a span recorder,
// and closes the FileMapper.
func record(b []byte, cfg Config, feed func(*FileMapper, []byte)) (*tracetest.SpanRecorder, *FileMapper) {
	rec := tracetest.NewSpanRecorder()
	ids := spanid.NewGenerator(nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
	cfg.TracerProvider = tp
	tr := New(cfg)
	feed(tr, b)
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	return rec, tr
}

// feed gives b to tr line by line; a last line without LF is held back,
// as a follower would.
func feed(tr *FileMapper, b []byte) {
	off := int64(0)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		tr.Line(off, b[:i])
		off += int64(i) + 1
		b = b[i+1:]
	}
}

// feedPredecoded is feed through Predecode, decoding on a goroutine of its
// own as a follower does.
func feedPredecoded(tr *FileMapper, b []byte) {
	decode := tr.Predecode()
	rest := make(chan func(), 16)
	go func() {
		defer close(rest)
		off := int64(0)
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return
			}
			rest <- decode(off, b[:i])
			off += int64(i) + 1
			b = b[i+1:]
		}
	}()
	for f := range rest {
		f()
	}
}

// traceStream maps an event stream as `pi-otel replay` does.
func traceStream(t *testing.T, stream []byte) []*node {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := agentmap.New(tp, agentmap.WithInexactTimes())
	clock := ingest.NewStreamClock(time.Unix(1_700_000_000, 0))
	sink := ingest.New(m, ingest.WithClock(clock))
	r := framing.NewReader(bytes.NewReader(stream))
	var head [][]byte
	anchored := false
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		if !anchored {
			head = append(head, bytes.Clone(b))
			if at, ok := ingest.Anchor(head[len(head)-1:]); ok {
				clock.Reset(at)
				anchored = true
				for _, h := range head {
					sink.Record(h)
				}
			}
			continue
		}
		sink.Record(b)
	}
	if !anchored {
		for _, h := range head {
			sink.Record(h)
		}
	}
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, clock.Now())
	return forest(t, rec)
}

func sessionsDir(version string) string {
	return repo.Path(filepath.Join("testdata", "sessions", version))
}

// readCapture reads file (NAME.jsonl, NAME.stream.jsonl) of a version's
// session captures.
func readCapture(t *testing.T, version, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sessionsDir(version), file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captured lists the session captures of a version.
func captured(t *testing.T, version string) []string {
	t.Helper()
	names, err := capture.SessionNames(sessionsDir(version))
	if err != nil || len(names) == 0 {
		t.Fatalf("no session captures for %s: %v", version, err)
	}
	return names
}
