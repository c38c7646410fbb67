package sessionwatch

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/ledger"
)

// aheadTracer records when its file's lines are decoded, and makes the
// first file's last line wait, while it is traced, for the second file's
// first line to be decoded.
type aheadTracer struct {
	*fakeTracer
	decoded chan struct{} // closed at the file's first decoded line
	once    sync.Once
	wait    <-chan struct{} // the other file's decoded, for the last line
	last    int64
	waited  *bool
}

func (t *aheadTracer) Predecode() func(off int64, b []byte) func() {
	decode := t.fakeTracer.Predecode()
	return func(off int64, b []byte) func() {
		t.once.Do(func() { close(t.decoded) })
		apply := decode(off, b)
		if t.wait == nil || off != t.last {
			return apply
		}
		return func() {
			select {
			case <-t.wait:
				*t.waited = true
			case <-time.After(10 * time.Second):
			}
			apply()
		}
	}
}

// The first scan reads and decodes each file while the one before it is
// traced: a history is read on two cores, not one after the other.
func TestFirstScanReadsNextFileWhileTracing(t *testing.T) {
	h := &harness{t: t, dir: t.TempDir(), b: &book{}, clk: &clock{t: time.Now()}}
	// Read in the walk's order, a then b (no session ids: one group
	// each); a's last line is at offset 8.
	first := h.write("a.jsonl", "H\nU\nA\nU\nA\n")
	next := h.write("b.jsonl", "H\nU\nA\n")
	decoded := make(chan struct{})
	var waited bool
	var mu sync.Mutex
	tracers := map[string]bool{}
	cfg := Config{
		Dirs:       []string{h.dir},
		Flush:      h.b.flush,
		Now:        h.clk.now,
		IsSession:  func(first []byte) bool { return string(first) == "H" },
		Settle:     10 * time.Second,
		CloseAfter: time.Hour,
		StatePath:  filepath.Join(t.TempDir(), "w.json"),
		Ledger:     ledger.New(),
	}
	cfg.NewTracer = func(spec TracerSpec) Tracer {
		at := &aheadTracer{fakeTracer: h.b.tracer(spec, cfg.Ledger).(*fakeTracer), decoded: make(chan struct{}), waited: &waited}
		switch spec.Path {
		case first:
			at.wait, at.last = decoded, 8
		case next:
			at.decoded = decoded
		}
		mu.Lock()
		tracers[spec.Path] = true
		mu.Unlock()
		return at
	}
	f := New(cfg)
	if err := f.load(); err != nil {
		t.Fatal(err)
	}
	f.scan(true)
	if !waited {
		t.Errorf("the second file was not decoded while the first was traced")
	}
	if len(tracers) != 2 {
		t.Fatalf("%d tracers, want 2", len(tracers))
	}
}
