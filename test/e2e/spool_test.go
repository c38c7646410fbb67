//go:build realstack

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// TestSpoolAcrossProcesses: a short real Pi run whose collector is away
// keeps its spans on disk; the next pi-otel process, once the collector is
// back, delivers them first. Nothing is lost, nothing arrives twice.
func TestSpoolAcrossProcesses(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	spoolDir := t.TempDir()
	s := prepareJSON(t, "spool-across-processes", "Run it",
		fakemodel.Tools(fakemodel.Bash("call_1", "echo one")),
		fakemodel.Text("Done.", 2),
	)
	since := time.Now().Add(-time.Second)
	const service = "spool-first"
	spool := "PI_OTEL_SPOOL_DIR=" + spoolDir
	first := faultStart(t, s.pi, append(faultOTLP(addr, service), spool, "PI_OTEL_FLUSH_TIMEOUT=1s"),
		append([]string{"run", "--"}, s.piArgs()...)...).wait()
	if first.code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", first.code, first.stderr)
	}
	first.complete(t)
	kept := fmt.Sprintf("%d kept in %s", first.sum.Spans, spoolDir)
	if !strings.Contains(first.sum.Line, kept) || first.sum.dropped+first.sum.failed != 0 {
		t.Fatalf("want all %d spans kept, got: %s", first.sum.Spans, first.sum.Line)
	}

	j := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	// The next pi-otel processes send the spool first, each within its own
	// flush timeout: on a loaded machine one may leave a file for the next.
	lateRE := regexp.MustCompile(`(\d+) spans? of earlier runs delivered`)
	late := 0
	for i := 0; i < 5; i++ {
		if ents, _ := os.ReadDir(spoolDir); len(ents) == 0 {
			break
		}
		next := faultStart(t, s.pi, append(faultOTLP(addr, "spool-next"), spool),
			"replay", repo.Captures("pi-1.6.0", "text.jsonl")).wait()
		if next.code != 0 {
			t.Fatalf("the next pi-otel exited %d\n%s", next.code, next.stderr)
		}
		if m := lateRE.FindStringSubmatch(next.sum.Line); m != nil {
			n, _ := strconv.Atoi(m[1])
			late += n
		}
	}
	if late != first.sum.Spans {
		t.Errorf("the next processes report %d late spans, want %d", late, first.sum.Spans)
	}
	got := faultWaitSpans(t, j, service, since, first.sum.Spans)
	if len(got) != first.sum.Spans {
		t.Errorf("Jaeger holds %d of the first run's spans, want %d", len(got), first.sum.Spans)
	}
	if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 {
		t.Errorf("spool not empty after delivery: %v", ents)
	}
}
