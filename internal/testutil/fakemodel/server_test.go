package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

type streamed struct {
	chunks    []chunk
	done      bool
	text      string
	reasoning string
	calls     map[int]*[3]string // id, name, arguments
	finish    string
}

func post(t *testing.T, s *Server, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readStream parses an SSE body the way an OpenAI client does.
func readStream(t *testing.T, r io.Reader) (streamed, error) {
	t.Helper()
	st := streamed{calls: map[int]*[3]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			st.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		st.chunks = append(st.chunks, c)
		for _, ch := range c.Choices {
			st.text += ch.Delta.Content
			st.reasoning += ch.Delta.ReasoningContent
			for _, tc := range ch.Delta.ToolCalls {
				call := st.calls[tc.Index]
				if call == nil {
					call = &[3]string{}
					st.calls[tc.Index] = call
				}
				if tc.ID != "" {
					call[0] = tc.ID
				}
				if tc.Function.Name != "" {
					call[1] = tc.Function.Name
				}
				call[2] += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				st.finish = *ch.FinishReason
			}
		}
	}
	return st, sc.Err()
}

const streamReq = `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

func TestTextStream(t *testing.T) {
	s := Start(t, WithScript(Text("Hello, world — ünïcode", 4).WithUsage(Usage{PromptTokens: 100, CompletionTokens: 9, CachedTokens: 40, ReasoningTokens: 3})))
	resp := post(t, s, streamReq)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	st, err := readStream(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.text != "Hello, world — ünïcode" {
		t.Errorf("text %q", st.text)
	}
	if !st.done {
		t.Error("no [DONE]")
	}
	if st.finish != "stop" {
		t.Errorf("finish %q, want stop", st.finish)
	}
	deltas := 0
	for _, c := range st.chunks {
		if c.Object != "chat.completion.chunk" || c.Model != "m1" || c.ID != "chatcmpl-fake-0" {
			t.Errorf("chunk header %+v", c)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			deltas++
		}
	}
	if deltas != 4 {
		t.Errorf("%d content deltas, want 4", deltas)
	}
	last := st.chunks[len(st.chunks)-1]
	if last.Usage == nil || len(last.Choices) != 0 {
		t.Fatalf("last chunk %+v, want a usage-only chunk", last)
	}
	u := last.Usage
	if u.PromptTokens != 100 || u.CompletionTokens != 9 || u.PromptTokensDetails.CachedTokens != 40 || u.CompletionTokensDetails.ReasoningTokens != 3 {
		t.Errorf("usage %+v", *u)
	}
	if got := s.Remaining(); got != 0 {
		t.Errorf("remaining %d", got)
	}
}

func TestNoUsageUnlessAsked(t *testing.T) {
	s := Start(t, WithScript(Text("x", 1)))
	st, err := readStream(t, post(t, s, `{"stream":true,"messages":[]}`).Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.chunks {
		if c.Usage != nil {
			t.Errorf("usage chunk without include_usage: %+v", c)
		}
	}
}

func TestDerivedUsage(t *testing.T) {
	s := Start(t, WithScript(Text("abcdefgh", 2)))
	st, err := readStream(t, post(t, s, streamReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	u := st.chunks[len(st.chunks)-1].Usage
	if u == nil || u.PromptTokens != len(streamReq)/4+1 || u.CompletionTokens != 3 {
		t.Errorf("derived usage %+v", u)
	}
}

func TestReasoningAndTools(t *testing.T) {
	s := Start(t, WithScript(
		Thinking("deep thought", 3, "", 0),
		Tools(Bash("call_a", "ls -la"), Call("", "read", map[string]any{"path": "x.txt"})),
	))
	st, err := readStream(t, post(t, s, streamReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.reasoning != "deep thought" || st.text != "" {
		t.Errorf("reasoning %q text %q", st.reasoning, st.text)
	}
	st, err = readStream(t, post(t, s, streamReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.finish != "tool_calls" {
		t.Errorf("finish %q", st.finish)
	}
	if len(st.calls) != 2 {
		t.Fatalf("%d calls", len(st.calls))
	}
	if c := st.calls[0]; c[0] != "call_a" || c[1] != "bash" || c[2] != `{"command":"ls -la"}` {
		t.Errorf("call 0 = %q", c)
	}
	if c := st.calls[1]; c[0] != "call_1_1" || c[1] != "read" || c[2] != `{"path":"x.txt"}` {
		t.Errorf("call 1 = %q", c)
	}
}

func TestErrors(t *testing.T) {
	s := Start(t, WithScript(Unavailable(), Overloaded(), ContextOverflow(), Error(418, "teapot")))
	for _, want := range []struct {
		status int
		body   string
	}{{503, "Service Unavailable"}, {529, "Overloaded"}, {400, "exceeds the context window"}, {418, "teapot"}} {
		resp := post(t, s, streamReq)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want.status || !strings.Contains(string(body), want.body) {
			t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, body, want.status, want.body)
		}
	}
}

func TestCut(t *testing.T) {
	s := Start(t, WithScript(Text("one two three four five", 5).WithCutAfter(3)))
	resp := post(t, s, streamReq)
	st, err := readStream(t, resp.Body)
	if err == nil {
		t.Error("reading a cut stream gave no error")
	}
	if st.done {
		t.Error("cut stream ended with [DONE]")
	}
	if st.text == "" || st.text == "one two three four five" {
		t.Errorf("text %q, want a prefix", st.text)
	}
}

func TestBeyondScript(t *testing.T) {
	s, err := New(WithScript(Text("only", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post(t, s, streamReq)
	resp := post(t, s, streamReq)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(body), "script exhausted at request #1") {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
	errs := s.ScriptErrors()
	if len(errs) != 1 || !strings.Contains(errs[0], "#1") {
		t.Errorf("script errors %v", errs)
	}
}

func TestRecordsRequests(t *testing.T) {
	s := Start(t, WithScript(Text("a", 1), Text("b", 1)), WithModels("m1", "m2"))
	post(t, s, streamReq)
	resp, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(models.Data) != 2 || models.Data[1].ID != "m2" {
		t.Errorf("models %+v", models)
	}
	post(t, s, `{"model":"m2","stream":true,"messages":[{"role":"system","content":"sys"},{"role":"user","content":"second"}]}`)

	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	chats := s.ChatRequests()
	if len(chats) != 2 || chats[0].Index != 0 || chats[1].Index != 1 {
		t.Fatalf("chat requests %+v", chats)
	}
	c, err := chats[1].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "m2" || len(c.Messages) != 2 || c.Messages[1].Role != "user" || !bytes.Contains(c.Messages[1].Content, []byte("second")) {
		t.Errorf("decoded %+v", c)
	}
}

func TestSummaryRoute(t *testing.T) {
	s := Start(t, WithScript(Text("turn answer", 1)), WithSummaries("the summary", 2))
	summaryReq := `{"stream":true,"messages":[{"role":"system","content":"You are a context summarization assistant. Read..."},{"role":"user","content":"<conversation>"}]}`
	st, err := readStream(t, post(t, s, summaryReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.text != "the summary" {
		t.Errorf("summary text %q", st.text)
	}
	st, err = readStream(t, post(t, s, streamReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.text != "turn answer" {
		t.Errorf("turn text %q", st.text)
	}
	if !IsSummaryRequest(s.ChatRequests()[0]) || IsSummaryRequest(s.ChatRequests()[1]) {
		t.Error("IsSummaryRequest misclassifies")
	}
}

func TestFunc(t *testing.T) {
	s := Start(t, WithScript(Func(func(r Request) Response {
		c, _ := r.Chat()
		return Text("saw "+c.Model, 1)
	})))
	st, err := readStream(t, post(t, s, streamReq).Body)
	if err != nil {
		t.Fatal(err)
	}
	if st.text != "saw m1" {
		t.Errorf("text %q", st.text)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want []string
	}{
		{"abcdefg", 3, []string{"abc", "de", "fg"}},
		{"ab", 5, []string{"a", "b"}},
		{"", 3, nil},
		{"héllo", 0, []string{"héllo"}},
		{"€€€€", 2, []string{"€€", "€€"}},
	} {
		got := Split(tc.s, tc.n)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
