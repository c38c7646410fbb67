package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestLibrary builds the example, runs it on captured streams and holds
// the spans it prints to the captures' golden trees: a program of your own
// gets the very spans pi-otel makes.
func TestLibrary(t *testing.T) {
	bin := proc.MustBuild(t, t.TempDir(), "./examples/library")
	for _, name := range []string{"text", "bash-tool", "parallel-tools", "retry-529", "threshold-compaction"} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, repo.Captures("pi-1.6.0", name+".jsonl"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.Bytes())
			}
			forest := stdoutSpans(t, out)
			spantree.Want(t, spantree.CaptureTree("pi-1.6.0", name), forest)
			// Mapper.Stats: a run per root printed, every record known and in place.
			runs := 0
			for _, n := range forest {
				if n.Name == vocab.SpanRoot {
					runs++
				}
			}
			want := fmt.Sprintf(`^\d+ records, %d runs, 0 unknown, 0 out of place\n$`, runs)
			if !regexp.MustCompile(want).Match(stderr.Bytes()) {
				t.Errorf("stats line %q, want %s", stderr.String(), want)
			}
		})
	}
}

// stdoutSpans reads the stdout exporter's JSON, one object a span.
func stdoutSpans(t *testing.T, out []byte) []*spantree.Node {
	t.Helper()
	type kv struct {
		Key   string
		Value struct{ Value any }
	}
	var nodes []*spantree.Node
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var s struct {
			Name                string
			SpanContext, Parent struct{ TraceID, SpanID string }
			SpanKind            trace.SpanKind
			StartTime, EndTime  time.Time
			Attributes          []kv
			Status              struct{ Code, Description string }
		}
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("stdout exporter output: %v", err)
		}
		n := &spantree.Node{
			Name: s.Name, TraceID: s.SpanContext.TraceID, SpanID: s.SpanContext.SpanID,
			Kind:   s.SpanKind.String(),
			Status: spantree.Status{Code: strings.ToLower(s.Status.Code), Message: s.Status.Description},
			Start:  s.StartTime, End: s.EndTime,
			Attrs: map[string]string{},
		}
		if s.Parent.SpanID != (trace.SpanID{}).String() {
			n.ParentID = s.Parent.SpanID
		}
		for _, a := range s.Attributes {
			n.Attrs[a.Key] = spantree.Text(number(a.Value.Value))
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		t.Fatal("no spans printed")
	}
	return spantree.Forest(t, nodes)
}

// number turns JSON's float64 back into the int64 it was when it is whole,
// as the SDK's INT64 values are.
func number(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}
