package session

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// spanList is what a trace is, for comparing two: each span's id, name,
// cost and tokens, in id order.
func spanList(tr traced) []string {
	var out []string
	var walk func(n *node)
	walk = func(n *node) {
		cost, _ := n.attr(string(vocab.CostTotalKey))
		in, _ := n.attr(string(vocab.GenAIUsageInputTokensKey))
		outT, _ := n.attr(string(vocab.GenAIUsageOutputTokensKey))
		out = append(out, fmt.Sprintf("%s %s cost=%v in=%v out=%v", n.s.SpanContext().SpanID(), n.name(), cost.String(), in.String(), outT.String()))
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, r := range tr.roots {
		walk(r)
	}
	slices.Sort(out)
	return out
}

// Writes that met on one line are read as the entries they are: every
// real capture, with any two of its lines on one line (back to back,
// with padding between them, or after a copy of the second cut short),
// gives the trace of the file as Pi wrote it, the line counted as
// repaired and nothing else lost.
func TestEntriesOnOneLine(t *testing.T) {
	files, _ := filepath.Glob(repo.Path("testdata/sessions/*/*.jsonl"))
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".stream.jsonl") || strings.HasSuffix(path, ".in.jsonl") {
			continue
		}
		b := repo.Read(t, strings.TrimPrefix(path, repo.Path("")+"/"))
		want := spanList(traceBytes(t, b, Config{}))
		lines := bytes.SplitAfter(b, []byte("\n"))
		for i := 0; i+1 < len(lines) && len(lines[i+1]) > 1; i++ {
			next := bytes.TrimSuffix(lines[i+1], []byte("\n"))
			for _, v := range []struct {
				name    string
				between []byte
				damaged int64
			}{
				{"back to back", nil, 0},
				{"padding", []byte("\x00\x00\x00"), 1},
				// A write cut inside a string, then the whole entry again.
				{"cut short", next[:bytes.IndexByte(next[20:], '"')+21], 1},
			} {
				joined := slices.Concat(slices.Concat(lines[:i+1]...), nil)
				joined = append(bytes.TrimSuffix(joined, []byte("\n")), v.between...)
				joined = append(joined, slices.Concat(lines[i+1:]...)...)
				tr := traceBytes(t, joined, Config{})
				if got := spanList(tr); !slices.Equal(got, want) {
					t.Errorf("%s, lines %d and %d %s: the trace differs\n got %q\nwant %q", path, i+1, i+2, v.name, got, want)
				}
				st := tr.tracer.Stats()
				if st.Repaired != 1 || st.Damaged != v.damaged {
					t.Errorf("%s, lines %d and %d %s: %d repaired, %d damaged; want 1, %d", path, i+1, i+2, v.name, st.Repaired, st.Damaged, v.damaged)
				}
				n++
			}
		}
	}
	if n < 300 {
		t.Fatalf("only %d joined lines tried", n)
	}
}

// So are records of Pi's event stream: every real capture's stream, with
// any two of its records on one line, gives the trace it gives as Pi
// wrote it (span ids are random there: spans are compared by name, cost
// and tokens).
func TestStreamRecordsOnOneLine(t *testing.T) {
	noIDs := func(spans []string) []string {
		out := make([]string, len(spans))
		for i, s := range spans {
			_, out[i], _ = strings.Cut(s, " ")
		}
		slices.Sort(out)
		return out
	}
	files, _ := filepath.Glob(repo.Path("testdata/sessions/pi-1.6.0/*.stream.jsonl"))
	n := 0
	for _, path := range files {
		b := repo.Read(t, strings.TrimPrefix(path, repo.Path("")+"/"))
		want := noIDs(spanList(traced{roots: traceStream(t, b)}))
		lines := bytes.SplitAfter(b, []byte("\n"))
		for i := 0; i+1 < len(lines) && len(lines[i+1]) > 1; i += 3 {
			joined := slices.Concat(lines[:i+1]...)
			joined = append(bytes.TrimSuffix(joined, []byte("\n")), slices.Concat(lines[i+1:]...)...)
			if got := noIDs(spanList(traced{roots: traceStream(t, joined)})); !slices.Equal(got, want) {
				t.Errorf("%s, records %d and %d on one line: the trace differs\n got %q\nwant %q", path, i+1, i+2, got, want)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("only %d joined lines tried", n)
	}
}

// A line that, taken apart, holds no entry either is one damaged line, not
// a repair: an object Pi never writes and garbage after it, or two values
// that are no entries.
func TestSplitWithNoEntryIsOneDamagedLine(t *testing.T) {
	b := repo.Read(t, "testdata/sessions/pi-1.6.0/bash-tool.jsonl")
	for _, bad := range []string{"{}0", `{"a":1} {"b":2}`, "[1]{}", "{} junk {}"} {
		tr := traceBytes(t, append(append([]byte{}, b...), bad+"\n"...), Config{})
		if st := tr.tracer.Stats(); st.Damaged != 1 || st.Repaired != 0 {
			t.Errorf("%q: %d damaged, %d repaired; want 1 and 0", bad, st.Damaged, st.Repaired)
		}
	}
}
