package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Index counts chat completion requests from 0; -1 for other paths.
	Index int
}

// Decode unmarshals the request body into v.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// ChatRequest is the part of a Chat Completions request tests look at.
type ChatRequest struct {
	Model         string         `json:"model"`
	Stream        bool           `json:"stream"`
	StreamOptions map[string]any `json:"stream_options"`
	Messages      []ChatMessage  `json:"messages"`
	Tools         []any          `json:"tools"`
}

// ChatMessage is one message of a Chat Completions request. Content is kept
// raw because it is a string or an array of parts.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []any           `json:"tool_calls,omitempty"`
}

// Chat decodes the body as a Chat Completions request.
func (r Request) Chat() (ChatRequest, error) {
	var c ChatRequest
	err := json.Unmarshal(r.Body, &c)
	return c, err
}

type config struct {
	queue  []Response
	models []string
	routes []route
}

// Option configures a Server.
type Option = option.Option[config]

// WithScript queues responses, one per chat completion request, in order.
func WithScript(rs ...Response) Option {
	return option.Func[config](func(c *config) { c.queue = append(c.queue, rs...) })
}

// WithModels sets the model ids GET /v1/models lists (default "fake-model").
func WithModels(ids ...string) Option {
	return option.Func[config](func(c *config) { c.models = ids })
}

// WithRoute answers requests for which match is true with respond, outside
// the script. Pi's compaction summaries are the use: how many a run makes is
// Pi's business, while the script stays about the agent's turns.
func WithRoute(match func(Request) bool, respond func(Request) Response) Option {
	return option.Func[config](func(c *config) { c.routes = append(c.routes, route{match, respond}) })
}

// WithSummaries answers every compaction or branch summary request (see
// IsSummaryRequest) with text in n deltas.
func WithSummaries(text string, n int) Option {
	return WithRoute(IsSummaryRequest, func(Request) Response { return Text(text, n) })
}

// IsSummaryRequest reports whether req is one of Pi's summarization requests
// rather than an agent turn: their system prompt introduces a summarization
// assistant.
func IsSummaryRequest(req Request) bool {
	c, err := req.Chat()
	if err != nil || len(c.Messages) == 0 {
		return false
	}
	m := c.Messages[0]
	if m.Role != "system" && m.Role != "developer" {
		return false
	}
	return bytes.Contains(m.Content, []byte("summarization assistant"))
}

type route struct {
	match   func(Request) bool
	respond func(Request) Response
}

// Server is a scripted Chat Completions endpoint on 127.0.0.1.
type Server struct {
	ln     net.Listener
	srv    *http.Server
	models []string
	routes []route

	mu        sync.Mutex
	queue     []Response
	requests  []Request
	chats     int
	scriptErr []string
	closed    chan struct{}
}

// New starts a server on a free loopback port.
func New(opts ...Option) (*Server, error) {
	c := option.Apply(config{models: []string{"fake-model"}}, opts)
	s := &Server{models: c.models, routes: c.routes, queue: c.queue, closed: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("/", s.unknown)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Start is New for tests: it fails tb on error, closes the server on cleanup
// and reports script errors (requests beyond the script) as test errors.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Close()
		for _, e := range s.ScriptErrors() {
			tb.Errorf("fakemodel: %s", e)
		}
	})
	return s
}

// URL is the server's base URL, e.g. http://127.0.0.1:PORT/v1.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Enqueue appends responses to the script.
func (s *Server) Enqueue(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Remaining is the number of scripted responses not played yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ChatRequests returns the chat completion requests received so far.
func (s *Server) ChatRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Index >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// ScriptErrors lists requests the script had no answer for.
func (s *Server) ScriptErrors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.scriptErr...)
}

// Close stops the server and cuts open connections, which also ends any
// scripted delay still pending.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	_ = s.srv.Close()
}

func (s *Server) record(r *http.Request, chat bool) (Request, error) {
	body, err := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Index: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	if chat {
		req.Index = s.chats
		s.chats++
	}
	s.requests = append(s.requests, req)
	return req, err
}

func (s *Server) route(req Request) (Response, bool) {
	for _, rt := range s.routes {
		if rt.match(req) {
			return rt.respond(req), true
		}
	}
	return Response{}, false
}

func (s *Server) next(req Request) (Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		s.scriptErr = append(s.scriptErr, fmt.Sprintf("chat request #%d has no scripted response (%d bytes)", req.Index, len(req.Body)))
		return Response{}, false
	}
	r := s.queue[0]
	s.queue = s.queue[1:]
	return r, true
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	_, _ = s.record(r, false)
	data := make([]map[string]any, 0, len(s.models))
	for _, id := range s.models {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "fakemodel"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) unknown(w http.ResponseWriter, r *http.Request) {
	_, _ = s.record(r, false)
	writeJSON(w, http.StatusNotFound, errBody("fakemodel: no route for "+r.Method+" "+r.URL.Path))
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	req, err := s.record(r, true)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errBody("fakemodel: reading body: "+err.Error()))
		return
	}
	resp, ok := s.route(req)
	if !ok {
		resp, ok = s.next(req)
	}
	if !ok {
		writeJSON(w, http.StatusInternalServerError, errBody(fmt.Sprintf("fakemodel: script exhausted at request #%d", req.Index)))
		return
	}
	if resp.Func != nil {
		resp = resp.Func(req)
	}
	if !s.sleep(resp.FirstByteDelay) {
		return
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		_, _ = io.WriteString(w, resp.ErrorBody)
		return
	}
	var cr ChatRequest
	_ = json.Unmarshal(req.Body, &cr)
	s.stream(w, req, cr, resp)
}

// sleep waits d, or returns false when the server closes first.
func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closed:
		return false
	}
}

func (s *Server) stream(w http.ResponseWriter, req Request, cr ChatRequest, resp Response) {
	chunks := buildChunks(req, cr, resp)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, c := range chunks {
		if resp.CutAfter > 0 && i == resp.CutAfter {
			if flusher != nil {
				flusher.Flush()
			}
			cut(w)
			return
		}
		if i > 0 && !s.sleep(resp.ChunkDelay) {
			return
		}
		if _, err := w.Write(c); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// cut closes the connection under an unfinished chunked response, so the
// client sees the stream end abruptly.
func cut(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST rather than FIN: a hard cut
	}
	_ = conn.Close()
}

// buildChunks renders the SSE lines of one streamed response, each a
// complete "data: …\n\n" event.
func buildChunks(req Request, cr ChatRequest, resp Response) [][]byte {
	id := fmt.Sprintf("chatcmpl-fake-%d", req.Index)
	model := cr.Model
	if model == "" {
		model = "fake-model"
	}
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) []byte {
		return sse(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	var out [][]byte
	out = append(out, chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	outChars := 0
	for _, d := range resp.Reasoning {
		outChars += len(d)
		out = append(out, chunk(map[string]any{"reasoning_content": d}, nil))
	}
	for _, d := range resp.Text {
		outChars += len(d)
		out = append(out, chunk(map[string]any{"content": d}, nil))
	}
	for i, tc := range resp.ToolCalls {
		callID := tc.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%d_%d", req.Index, i)
		}
		out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": callID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		n := tc.Fragments
		if n == 0 {
			n = 3
		}
		outChars += len(tc.Name) + len(tc.Arguments)
		for _, frag := range Split(tc.Arguments, n) {
			out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frag},
			}}}, nil))
		}
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = "stop"
		if len(resp.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	out = append(out, chunk(map[string]any{}, finish))
	if include, _ := cr.StreamOptions["include_usage"].(bool); include {
		u := resp.Usage
		if u == nil {
			// Rough but deterministic: about four bytes per token.
			u = &Usage{PromptTokens: len(req.Body)/4 + 1, CompletionTokens: outChars/4 + 1}
		}
		prompt := map[string]any{"cached_tokens": u.CachedTokens}
		if u.CacheWriteTokens > 0 {
			prompt["cache_write_tokens"] = u.CacheWriteTokens
		}
		out = append(out, sse(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{},
			"usage": map[string]any{
				"prompt_tokens":             u.PromptTokens,
				"completion_tokens":         u.CompletionTokens,
				"total_tokens":              u.PromptTokens + u.CompletionTokens,
				"prompt_tokens_details":     prompt,
				"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			},
		}))
	}
	out = append(out, []byte("data: [DONE]\n\n"))
	return out
}

func sse(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are marshalled here
	}
	var buf bytes.Buffer
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return buf.Bytes()
}

func errBody(msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "fakemodel_error"}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
