package app

import (
	"bytes"
	"io"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// A followed session file: a run that has answered and gone quiet is traced
// while the follower waits for more, before the next prompt arrives.
func TestFollowSessionTracesAQuietRun(t *testing.T) {
	t.Parallel()
	b := repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl")
	lines := bytes.SplitAfter(b, []byte("\n"))
	second := -1
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"text":"Second prompt"`)) {
			second = i
		}
	}
	if second < 0 {
		t.Fatal("no second prompt in the capture")
	}
	rec := tracetest.NewSpanRecorder()
	tr := session.New(session.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	ch := make(chan []byte)
	var off int64
	next := func() (record, error) {
		l, ok := <-ch
		if !ok {
			return record{}, io.EOF
		}
		at := off
		off += int64(len(l))
		return record{at, bytes.TrimSuffix(l, []byte("\n"))}, nil
	}
	feed := func(rec record) { tr.Line(rec.off, rec.b) }
	done := make(chan error)
	go func() { done <- followSession(tr, next, feed) }()
	for _, l := range lines[:second] {
		ch <- l
	}
	roots := func() int {
		n := 0
		for _, s := range rec.Ended() {
			if s.Name() == "invoke_agent pi" {
				n++
			}
		}
		return n
	}
	// The file's answer is long past its settle time: the next ticks trace it.
	wait.Until(30*time.Second, func() bool { return roots() != 0 })
	if roots() != 1 {
		t.Fatal("the quiet, answered run was not traced while following")
	}
	for _, l := range lines[second:] {
		if len(l) > 0 {
			ch <- l
		}
	}
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	if roots() != 2 {
		t.Errorf("%d runs traced, want 2", roots())
	}
}
