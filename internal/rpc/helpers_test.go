package rpc_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// harness is a Tracker writing to an in-memory recorder.
type harness struct {
	t   *testing.T
	rec *spantree.Recorder
	m   *agentmap.Mapper
	tr  *rpc.Tracker
	at  time.Time
}

func newHarness(t *testing.T, opts ...rpc.Option) *harness {
	t.Helper()
	rec := spantree.NewRecorder()
	m := agentmap.New(rec)
	return &harness{t: t, rec: rec, m: m, tr: rpc.New(m, rec, opts...),
		at: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

// in and out feed one synthetic line 1 ms after the previous one.
func (h *harness) in(line string) {
	h.at = h.at.Add(time.Millisecond)
	h.tr.FromController([]byte(line), h.at)
}

func (h *harness) out(line string) {
	h.at = h.at.Add(time.Millisecond)
	h.tr.FromPi([]byte(line), h.at)
}

// wait moves the clock on without a record.
func (h *harness) wait(d time.Duration) { h.at = h.at.Add(d) }

// play feeds a recorded transcript the way the proxy would: one CR before
// the LF is stripped, as framing does.
func (h *harness) play(lines []rpctest.Line) {
	for _, l := range lines {
		raw := bytes.TrimSuffix(l.Raw, []byte{'\r'})
		if l.At.After(h.at) {
			h.at = l.At
		}
		if l.Dir == rpctest.In {
			h.tr.FromController(raw, l.At)
		} else {
			h.tr.FromPi(raw, l.At)
		}
	}
}

// close ends the session as if Pi exited with end.
func (h *harness) close(end agentmap.Ending) []*spantree.Node {
	h.at = h.at.Add(time.Millisecond)
	h.tr.Close(end, h.at)
	return h.rec.Forest(h.t)
}

var exit0 = agentmap.Ending{Reason: vocab.EndExit}

// wantShapes compares the names and nesting of a synthetic session's
// traces with want (leading newline ignored). Recorded sessions compare
// with their golden trees instead.
func wantShapes(t *testing.T, f []*spantree.Node, want string) {
	t.Helper()
	want = strings.TrimLeft(want, "\n")
	if got := spantree.Shape(f); got != want {
		t.Fatalf("traces:\n%s\nwant:\n%s", got, want)
	}
}
