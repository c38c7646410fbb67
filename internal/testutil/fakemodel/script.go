// Package fakemodel is a scripted OpenAI-compatible Chat Completions server
// for end-to-end tests: each request pops the next scripted Response, so a
// test decides exactly what the real Pi sees from its "model".
package fakemodel

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Response is one scripted answer to one POST /v1/chat/completions request.
// The zero value streams an empty assistant message that stops normally.
type Response struct {
	// Status, when not 0 or 200, answers with that HTTP status and ErrorBody
	// instead of a stream.
	Status    int
	ErrorBody string

	Reasoning []string   // reasoning_content deltas, sent before the text
	Text      []string   // content deltas
	ToolCalls []ToolCall // streamed after the text

	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// Usage, when nil, is derived from the request and response sizes.
	Usage *Usage

	FirstByteDelay time.Duration // before the response headers
	ChunkDelay     time.Duration // between two SSE chunks

	// CutAfter > 0 writes that many SSE chunks, then closes the connection
	// without finishing the stream.
	CutAfter int

	// Func, when set, builds the response from the request; the other fields
	// are ignored.
	Func func(Request) Response
}

// ToolCall is one streamed tool call.
type ToolCall struct {
	ID        string // defaults to call_<request>_<index>
	Name      string
	Arguments string // raw JSON text
	Fragments int    // argument deltas; defaults to 3
}

// Usage is the final usage chunk, in OpenAI's field names.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt_tokens_details.cached_tokens
	CacheWriteTokens int // prompt_tokens_details.cache_write_tokens
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
}

// Text streams s in n deltas of about equal size (n < 1 means 1).
func Text(s string, n int) Response {
	return Response{Text: Split(s, n)}
}

// Thinking streams reasoning in rn deltas, then text in tn deltas.
func Thinking(reasoning string, rn int, text string, tn int) Response {
	return Response{Reasoning: Split(reasoning, rn), Text: Split(text, tn)}
}

// Tools streams the given tool calls and finishes with "tool_calls".
func Tools(calls ...ToolCall) Response {
	return Response{ToolCalls: calls}
}

// Call is a tool call whose arguments are args marshalled to JSON.
func Call(id, name string, args any) ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("fakemodel.Call: %v", err))
	}
	return ToolCall{ID: id, Name: name, Arguments: string(b)}
}

// Bash is a call to Pi's bash tool.
func Bash(id, command string) ToolCall {
	return Call(id, "bash", map[string]any{"command": command})
}

// Error answers with an HTTP status and a raw body.
func Error(status int, body string) Response {
	return Response{Status: status, ErrorBody: body}
}

// Unavailable is HTTP 503, which Pi retries.
func Unavailable() Response {
	return Error(503, `{"error":{"message":"Service Unavailable","type":"server_error"}}`)
}

// Overloaded is HTTP 529 with "Overloaded" in the body, which Pi retries.
func Overloaded() Response {
	return Error(529, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`)
}

// ContextOverflow is HTTP 400 saying the prompt exceeds the context window,
// which Pi answers with an overflow compaction and a retry.
func ContextOverflow() Response {
	return Error(400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
}

// Func answers with whatever fn returns for the request.
func Func(fn func(Request) Response) Response {
	return Response{Func: fn}
}

// WithUsage returns r reporting u in its final usage chunk.
func (r Response) WithUsage(u Usage) Response { r.Usage = &u; return r }

// WithChunkDelay returns r pausing d between chunks.
func (r Response) WithChunkDelay(d time.Duration) Response { r.ChunkDelay = d; return r }

// WithFirstByteDelay returns r pausing d before it answers.
func (r Response) WithFirstByteDelay(d time.Duration) Response { r.FirstByteDelay = d; return r }

// WithCutAfter returns r cut after n chunks.
func (r Response) WithCutAfter(n int) Response { r.CutAfter = n; return r }

// WithText returns r with text appended as n more deltas.
func (r Response) WithText(s string, n int) Response {
	r.Text = append(r.Text, Split(s, n)...)
	return r
}

// Split cuts s into n pieces of about equal rune count without splitting a
// rune. Empty pieces are dropped.
func Split(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	runes := utf8.RuneCountInString(s)
	if runes == 0 {
		return nil
	}
	if n > runes {
		n = runes
	}
	out := make([]string, 0, n)
	size, extra := runes/n, runes%n
	for i := range n {
		k := size
		if i < extra {
			k++
		}
		end := 0
		for j := 0; j < k; j++ {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
