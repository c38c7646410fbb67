package agentmap_test

import (
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/content/redact"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// secretStream sends credentials through every error path the mapper
// reads: an assistant message_end, auto_retry_start and _end, a failed
// compaction and a summarization retry.
const secretKey = "sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFF"
const secretWord = "opensesame-Zq81x" // no redactor rule knows this shape

var secretStream = strings.NewReplacer("KEY", secretKey, "WORD", secretWord).Replace(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp"}
{"type":"agent_start"}
{"type":"turn_start"}
{"type":"message_start","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}
{"type":"message_end","message":{"role":"assistant","content":[],"provider":"p","model":"m","stopReason":"error","errorMessage":"529: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded for key KEY password=WORD\"}}"}}
{"type":"turn_end"}
{"type":"agent_end","messages":[],"willRetry":true}
{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":10,"errorMessage":"529 Overloaded authorization: Bearer KEY WORD"}
{"type":"agent_start"}
{"type":"compaction_start","reason":"overflow"}
{"type":"summarization_retry_scheduled","attempt":1,"maxAttempts":2,"delayMs":5,"errorMessage":"terminated: proxy said WORD (UND_ERR_SOCKET)"}
{"type":"compaction_end","reason":"overflow","result":null,"aborted":false,"willRetry":false,"errorMessage":"Summarization failed: 400 {\"error\":{\"code\":\"invalid_api_key\",\"message\":\"KEY WORD\"}}"}
{"type":"agent_end","messages":[],"willRetry":false}
{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"503: gateway echoed api_key=KEY WORD"}
{"type":"agent_settled"}
`)

func TestErrorTextsWithheldByDefault(t *testing.T) {
	f, _, _ := replay(t, []byte(secretStream), nil)
	root := spantree.One(t, f)
	assertNoText(t, root, secretKey)
	assertNoText(t, root, secretWord)
	assertNoText(t, root, "Overloaded for key")
	chat := root.Find("chat m")[0]
	if d := chat.Status.Message; d != "529 overloaded_error" {
		t.Errorf("chat status %q", d)
	}
	chat.WantAttrs(t, map[string]string{"error.type": "529"})
	root.Find("pi.retry")[0].WantAttrs(t, map[string]string{
		"pi.retry.error":       "529 overloaded",
		"pi.retry.final_error": "503",
	})
	comp := root.Find("pi.compaction")[0]
	if d := comp.Status.Message; d != "400 invalid_api_key" {
		t.Errorf("compaction status %q", d)
	}
	if ev := comp.Events; len(ev) != 1 || ev[0].Str("pi.retry.error") != "terminated UND_ERR_SOCKET" {
		t.Errorf("summarization retry events %v", ev)
	}
}

func TestErrorTextsRedactedWithContent(t *testing.T) {
	r, err := redact.New(redact.WithPatterns(`opensesame-\w+`))
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := replay(t, []byte(secretStream), nil, agentmap.WithContent(scrubOnly{r}))
	root := spantree.One(t, f)
	assertNoText(t, root, secretKey)
	assertNoText(t, root, secretWord)
	chat := root.Find("chat m")[0]
	if d := chat.Status.Message; !strings.Contains(d, "Overloaded for key [REDACTED:anthropic-key]") {
		t.Errorf("chat status %q: want the whole text, redacted", d)
	}
	if d := root.Status.Message; d != chat.Status.Message {
		t.Errorf("root status %q, want the chat's", d)
	}
}

// scrubOnly captures error texts through a real redactor; the message
// renderers are not under test here.
type scrubOnly struct{ r *redact.Redactor }

func (s scrubOnly) Scrub(v string) string                { return s.r.String(v) }
func (s scrubOnly) InputMessages(msgs [][]byte) string   { return "" }
func (s scrubOnly) OutputMessages(msgs [][]byte) string  { return "" }
func (s scrubOnly) SystemInstructions(msg []byte) string { return "" }
func (s scrubOnly) ToolArguments(args []byte) string     { return "" }
func (s scrubOnly) ToolResult(result []byte) string      { return "" }

// Replayed times come from different clocks and may run backwards; no
// span may end before it starts.
func TestNoNegativeDurations(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t0 := time.Unix(1000, 0)
	for i, line := range []string{
		`{"type":"agent_start"}`, `{"type":"turn_start"}`,
		`{"type":"message_start","message":{"role":"assistant","content":[],"model":"m"}}`,
		`{"type":"tool_execution_start","toolCallId":"c","toolName":"bash","args":{}}`,
		`{"type":"message_end","message":{"role":"assistant","content":[],"model":"m","stopReason":"aborted"}}`,
		`{"type":"tool_execution_end","toolCallId":"c","toolName":"bash","result":{},"isError":true}`,
		`{"type":"turn_end"}`, `{"type":"agent_end","messages":[],"willRetry":false}`, `{"type":"agent_settled"}`,
	} {
		// Each record a second earlier than the one before.
		if err := m.Record([]byte(line), t0.Add(-time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.Ended()) == 0 {
		t.Fatal("no spans")
	}
	for _, s := range rec.Ended() {
		if s.EndTime().Before(s.StartTime()) {
			t.Errorf("%s ends %v before it starts", s.Name(), s.StartTime().Sub(s.EndTime()))
		}
	}
}
