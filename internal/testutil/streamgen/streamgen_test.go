package streamgen_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

func TestStreamIsValidJSONL(t *testing.T) {
	data, st := streamgen.Generate(3<<20, streamgen.WithBigOutputs(20, 200<<10, 400<<10))
	recs := streamgen.Records(data)
	if int64(len(recs)) != st.Records || int64(len(data)) != st.Bytes {
		t.Fatalf("stats say %d records, %d bytes; the stream has %d, %d", st.Records, st.Bytes, len(recs), len(data))
	}
	largest := 0
	for i, r := range recs {
		if !utf8.Valid(r) || !json.Valid(r) {
			t.Fatalf("record %d is not valid JSON: %.200q", i, r)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil {
			t.Fatalf("record %d is not an object: %v", i, err)
		}
		largest = max(largest, len(r))
	}
	if largest != st.LargestRecord {
		t.Fatalf("largest record %d, stats say %d", largest, st.LargestRecord)
	}
	if !bytes.HasPrefix(data, []byte(`{"type":"session"`)) || !bytes.HasSuffix(data, []byte("{\"type\":\"agent_settled\",\"aborted\":false}\n")) {
		t.Fatalf("a stream starts with the session header and ends settled")
	}
}

// The stream has the shape of the real captures: updates carry the
// top-level usage object and an assistantMessageEvent, and they are most
// of the records.
func TestStreamMixLooksLikePi(t *testing.T) {
	data, st := streamgen.Generate(8<<20, streamgen.WithRetries(2), streamgen.WithCompactions(2), streamgen.WithBigOutputs(10, 1<<20, 2<<20))
	updates := int64(0)
	for k, v := range st.Types {
		if strings.HasPrefix(k, "message_update/") {
			updates += v.Records
		}
	}
	if float64(updates) < 0.8*float64(st.Records) {
		t.Fatalf("message_update is %d of %d records; a real session is mostly deltas", updates, st.Records)
	}
	for _, k := range []string{"message_update/text_delta", "message_update/thinking_delta", "message_update/toolcall_delta",
		"tool_execution_start", "tool_execution_update", "tool_execution_end", "auto_retry_start", "auto_retry_end",
		"compaction_start", "compaction_end", "agent_settled", "turn_end", "agent_end"} {
		if st.Types[k].Records == 0 {
			t.Errorf("no %s in %d records", k, st.Records)
		}
	}
	if st.LargestRecord < 1<<20 {
		t.Errorf("largest record %d bytes; big tool outputs are missing", st.LargestRecord)
	}
	for _, r := range streamgen.Records(data) {
		if streamgen.Kind(r) != "message_update/text_delta" {
			continue
		}
		var u struct {
			Type  string
			Usage *struct {
				Input, Output int64
				Cost          *struct{ Total float64 }
			}
			AssistantMessageEvent *struct {
				Type         string
				ContentIndex *int
				Delta        *string
			}
		}
		if err := json.Unmarshal(r, &u); err != nil || u.Usage == nil || u.Usage.Cost == nil || u.AssistantMessageEvent == nil ||
			u.AssistantMessageEvent.ContentIndex == nil || u.AssistantMessageEvent.Delta == nil {
			t.Fatalf("text_delta without Pi's shape: %s", r)
		}
	}
}

// Replayed through the real mapper, the stream is a clean lifecycle: one
// settled root per prompt and no anomaly.
func TestStreamIsAValidLifecycle(t *testing.T) {
	data, st := streamgen.Generate(6<<20, streamgen.WithRetries(3), streamgen.WithCompactions(3))
	rec := spantree.NewRecorder()
	m := agentmap.New(rec)
	sink := ingest.New(m, ingest.WithClock(ingest.NewStreamClock(time.Unix(0, 0))))
	for _, r := range streamgen.Records(data) {
		sink.Record(r)
	}
	ms := m.Stats()
	if len(ms.Anomalies) != 0 || ms.Unknown != 0 || m.Active() {
		t.Fatalf("mapper saw anomalies %v, %d unknown records, root open %v", ms.Anomalies, ms.Unknown, m.Active())
	}
	if ms.Roots != st.Prompts {
		t.Fatalf("%d roots for %d prompts", ms.Roots, st.Prompts)
	}
	if s := sink.Stats(); s.Malformed != 0 {
		t.Fatalf("%d malformed records", s.Malformed)
	}
	settled := 0
	for _, s := range rec.Spans.Ended() {
		if s.Name() == "invoke_agent pi" {
			for _, a := range s.Attributes() {
				if a.Key == "pi.settled" && a.Value.AsBool() {
					settled++
				}
			}
		}
	}
	if int64(settled) != st.Prompts {
		t.Fatalf("%d settled roots for %d prompts", settled, st.Prompts)
	}
}

func TestWriteIsDeterministicAndStopsAtAWholePrompt(t *testing.T) {
	var a, b, c bytes.Buffer
	sa, err := streamgen.Write(&a, 1<<20, streamgen.WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamgen.Write(&b, 1<<20, streamgen.WithSeed(7)); err != nil {
		t.Fatal(err)
	}
	if _, err := streamgen.Write(&c, 1<<20, streamgen.WithSeed(8)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same seed gave different streams")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds gave the same stream")
	}
	if sa.Bytes < 1<<20 || !bytes.HasSuffix(a.Bytes(), []byte("\"agent_settled\",\"aborted\":false}\n")) {
		t.Fatalf("Write stopped at %d bytes, not after a settled prompt", sa.Bytes)
	}
}

func TestPacedRecordsAreStampedAndMeasured(t *testing.T) {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- streamgen.WritePaced(pw, 20, 100*time.Microsecond)
		pw.Close()
	}()
	var tee bytes.Buffer
	lat, err := streamgen.MeasureLatency(io.TeeReader(pr, &tee), 0)
	if err != nil || <-errc != nil {
		t.Fatalf("measure: %v", err)
	}
	if lat.Count != 20 || lat.P50 <= 0 || lat.P50 > lat.P99 || lat.P99 > lat.Max {
		t.Fatalf("latency %+v", lat)
	}
	// The paced stream is itself a clean prompt.
	m := agentmap.New(spantree.NewRecorder())
	sink := ingest.New(m)
	for _, r := range streamgen.Records(tee.Bytes()) {
		sink.Record(r)
	}
	if st := m.Stats(); st.Roots != 1 || len(st.Anomalies) != 0 || m.Active() || sink.Stats().Malformed != 0 {
		t.Fatalf("paced stream: mapper %+v, sink %+v", st, sink.Stats())
	}
}

func TestMeasureLatencyReadsStamps(t *testing.T) {
	now := time.Now().UnixNano()
	in := strings.Join([]string{
		`{"type":"agent_start"}`,
		`{"type":"message_update","` + streamgen.StampKey + `":` + itoa(now-int64(time.Hour)) + `}`,
		`{"type":"message_update","` + streamgen.StampKey + `":` + itoa(now-1_000_000) + `}`,
	}, "\n") + "\n"
	lat, err := streamgen.MeasureLatency(strings.NewReader(in), 0)
	if err != nil || lat.Count != 2 {
		t.Fatalf("%+v %v", lat, err)
	}
	if lat.Max < time.Hour || lat.P50 < time.Millisecond {
		t.Fatalf("latencies %+v are shorter than the stamps say", lat)
	}
	// Skipping the first leaves only the later one, an hour shorter (the
	// margin is for a loaded machine's pauses).
	lat, err = streamgen.MeasureLatency(strings.NewReader(in), 1)
	if err != nil || lat.Count != 1 || lat.Max < time.Millisecond || lat.Max >= time.Hour {
		t.Fatalf("with one skipped: %+v %v", lat, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
