package errtext

import (
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	for _, c := range []struct{ msg, want, class string }{
		// Real texts from Pi 1.6.0 and 0.73 captures.
		{`529: {"message":"Overloaded","type":"overloaded_error"}`, "529 overloaded_error", "529"},
		{`529 Overloaded`, "529 overloaded", "529"},
		{`503: {"message":"Service Unavailable","type":"server_error"}`, "503 server_error", "503"},
		{`400: {"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}`,
			"400 invalid_request_error context_length_exceeded context_overflow", "context_overflow"},
		{`terminated: other side closed (UND_ERR_SOCKET)`, "terminated UND_ERR_SOCKET", "terminated"},
		{`This operation was aborted`, "aborted", "aborted"},
		{`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "529 overloaded_error", "529"},
		{`Summarization failed: 400 {"error":{"code":"invalid_api_key"}}`, "400 invalid_api_key", "400"},
		{`429 status code (no body)`, "429", "429"},
		{`{"error":{"status":"RESOURCE_EXHAUSTED","code":429}}`, "RESOURCE_EXHAUSTED", "_OTHER"},
		{`connect ECONNREFUSED 127.0.0.1:4000`, "ECONNREFUSED", "_OTHER"},
		// Nothing safe to say.
		{`No API key found for anthropic`, "", "_OTHER"},
		{`1234 is not a status, nor is 200ms`, "", "_OTHER"},
		// Values that look like identifiers but carry digits or mixed
		// case, as keys and tokens do, are never kept.
		{`401: {"type":"sk_live_abc123","code":"AbCdEfGh"}`, "401", "401"},
	} {
		if got := Summary(c.msg); got != c.want {
			t.Errorf("Summary(%q) = %q, want %q", c.msg, got, c.want)
		}
		if got := Class(c.msg); got != c.class {
			t.Errorf("Class(%q) = %q, want %q", c.msg, got, c.class)
		}
	}
}

type upper struct{}

func (upper) Scrub(s string) string { return strings.ToUpper(s) }

func TestText(t *testing.T) {
	const msg = "connection refused: key hunter2"
	if got := Text(msg, upper{}, "x"); got != strings.ToUpper(msg) {
		t.Errorf("with a scrubber: %q", got)
	}
	if got := Text(msg, nil, "busy"); got != "busy" {
		t.Errorf("fallback: %q", got)
	}
	if got := Text(msg, nil, ""); got != Withheld {
		t.Errorf("nothing safe: %q", got)
	}
}

// FuzzSummary checks that whatever the input, the summary is built only
// from tokens of a safe shape, so no free text can pass through.
func FuzzSummary(f *testing.F) {
	for _, s := range []string{
		`529: {"message":"Overloaded","type":"overloaded_error"}`,
		`terminated: other side closed (UND_ERR_SOCKET)`,
		`400 {"code":"invalid_api_key","type":"x"}`,
		`Summarization failed: 503 ECONNRESET`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		for _, tok := range strings.Fields(Summary(msg)) {
			switch {
			case len(tok) == 3 && leadingStatus(tok) == tok:
			case identRE.MatchString(tok), netRE.MatchString(tok) && netRE.FindString(tok) == tok:
			default:
				t.Fatalf("Summary(%q) holds %q", msg, tok)
			}
		}
	})
}
