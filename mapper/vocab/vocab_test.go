package vocab_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// declared parses this package's source and returns the string value of
// every constant whose name matches pick.
func declared(t *testing.T, pick func(name, typ string) bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob(repo.Path("mapper/vocab/*.go"))
	var decls []ast.Decl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	var out []string
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			typ := ""
			if id, ok := vs.Type.(*ast.Ident); ok {
				typ = id.Name
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				var lit *ast.BasicLit
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					lit = v
				case *ast.CallExpr: // attribute.Key("…")
					if len(v.Args) == 1 {
						lit, _ = v.Args[0].(*ast.BasicLit)
					}
					if sel, ok := v.Fun.(*ast.SelectorExpr); ok {
						typ = sel.Sel.Name
					}
				}
				if lit == nil || lit.Kind != token.STRING || !pick(name.Name, typ) {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// keyNames returns the names of the GenAI and error attribute key
// constants this package declares.
func keyNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), repo.Path("mapper/vocab/semconv.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasSuffix(n.Name, "Key") {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

func sorted[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	sort.Strings(out)
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %q is missing", what, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s: %q should not be there", what, g)
		}
	}
}

// TestListsAreComplete: every declared name is in the list tools check
// against, so a new constant cannot be forgotten there.
func TestListsAreComplete(t *testing.T) {
	keys := make([]string, 0)
	for _, k := range vocab.Keys() {
		keys = append(keys, string(k))
	}
	same(t, "Keys()", keys, declared(t, func(name, typ string) bool { return typ == "Key" && !strings.HasPrefix(name, "GenAI") }))
	// The v1.41 GenAI keys are semconv's own constants, which the source
	// does not spell: count them by name.
	var genAI []string
	for _, k := range vocab.GenAIKeys() {
		genAI = append(genAI, string(k))
	}
	slices.Sort(genAI)
	if n := len(slices.Compact(slices.Clone(genAI))); n != len(genAI) {
		t.Errorf("GenAIKeys() lists a key twice: %v", genAI)
	}
	if names := keyNames(t); len(genAI) != len(names) {
		t.Errorf("GenAIKeys() has %d keys, the package declares %d: %v", len(genAI), len(names), names)
	}
	for _, k := range declared(t, func(name, typ string) bool { return typ == "Key" && strings.HasPrefix(name, "GenAI") }) {
		if !slices.Contains(genAI, k) {
			t.Errorf("GenAIKeys(): %q is missing", k)
		}
	}
	same(t, "Metrics()", vocab.Metrics(), declared(t, func(name, _ string) bool { return strings.HasPrefix(name, "Metric") }))
	same(t, "Spans()", vocab.Spans(), declared(t, func(name, typ string) bool {
		return strings.HasPrefix(name, "Span") && typ == ""
	}))
	same(t, "Families()", sorted(vocab.Families()), declared(t, func(_, typ string) bool { return typ == "SpanFamily" }))
	same(t, "Events()", vocab.Events(), declared(t, func(name, typ string) bool { return strings.HasPrefix(name, "Event") && typ == "" }))
	for key, typ := range map[string]string{
		"pi.outcome": "Outcome", "pi.end_reason": "EndReason", "pi.retry.outcome": "RetryOutcome",
		"pi.compaction.outcome": "CompactionOutcome", "pi.ui.outcome": "UIOutcome",
		"pi.rpc.disposition": "Disposition", "pi.queue.kind": "QueueKind",
	} {
		same(t, "Values("+key+")", vocab.Values(attribute.Key(key)),
			declared(t, func(_, ty string) bool { return ty == typ }))
	}
}

// table returns the rows of the first Markdown table after heading, as
// cells with surrounding spaces trimmed.
func table(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/span-model.md has no %q", heading)
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(doc[i+len(heading)+2:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			if strings.HasPrefix(line, "## ") {
				break
			}
			continue
		}
		if !inTable {
			inTable = true
			continue // the header
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("no table under %q", heading)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]+)`")

// ticks returns the backticked words of a cell, up to any '='.
func ticks(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		w, _, _ := strings.Cut(m[1], "=")
		out = append(out, w)
	}
	return out
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(repo.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestSpanModelDocument compares the tables of docs/span-model.md with the
// vocabulary, both ways: the spans, the attribute reference (with each
// closed set of values), the end reasons and the span events.
func TestSpanModelDocument(t *testing.T) {
	doc := readDoc(t, "docs/span-model.md")

	var spans []string
	for _, row := range table(t, doc, "## Spans") {
		spans = append(spans, ticks(row[0])...)
	}
	want := vocab.Spans()
	for _, k := range vocab.Families() {
		want = append(want, k.Prefix()+"{"+map[vocab.SpanFamily]string{
			vocab.SpanChat: "model", vocab.SpanTool: "name", vocab.SpanAgent: "agent", vocab.SpanRPC: "command", vocab.SpanExtensionUI: "method",
		}[k]+"}")
	}
	same(t, "the spans table", spans, want)

	var keys []string
	for _, row := range table(t, doc, "## Attribute reference") {
		ks := ticks(row[0])
		if len(ks) != 1 || len(row) != 4 {
			t.Errorf("attribute reference: bad row %q", row)
			continue
		}
		keys = append(keys, ks[0])
		same(t, "the values of "+ks[0], ticks(row[3]), vocab.Values(attribute.Key(ks[0])))
	}
	var all []string
	for _, k := range vocab.Keys() {
		all = append(all, string(k))
	}
	same(t, "the attribute reference", keys, all)

	var reasons []string
	for _, row := range table(t, doc, "| `pi.end_reason` | meaning |") {
		reasons = append(reasons, ticks(row[0])...)
	}
	same(t, "the end reasons table", reasons, vocab.Values(vocab.EndReasonKey))

	var events []string
	for _, row := range table(t, doc, "## Span events") {
		events = append(events, ticks(row[0])...)
		// Every pi.* attribute an event row names is in the vocabulary.
		for _, w := range ticks(row[2]) {
			if strings.HasPrefix(w, "pi.") && !slices.Contains(all, w) {
				t.Errorf("span events: %s names %q, which is not a key", row[0], w)
			}
		}
	}
	same(t, "the span events table", events, vocab.Events())
}

// TestDocumentsNameOnlyTheVocabulary: any `pi.…` word in the span-model and
// RPC documents is a span, an event, a span family or an attribute key, so a
// renamed attribute cannot live on in the prose.
func TestDocumentsNameOnlyTheVocabulary(t *testing.T) {
	known := map[string]bool{}
	for _, k := range vocab.Keys() {
		known[string(k)] = true
	}
	for _, s := range append(append(vocab.Spans(), vocab.Events()...), vocab.LogEvents()...) {
		known[s] = true
	}
	for _, k := range vocab.Families() {
		known[string(k)] = true
	}
	// Metric names look like keys.
	for _, n := range vocab.Metrics() {
		known[n] = true
	}
	word := regexp.MustCompile(`^pi\.[a-z_.]+`)
	// A fenced block's backticks would pair with the prose's.
	fenced := regexp.MustCompile("(?s)```.*?```")
	for _, rel := range []string{"docs/span-model.md", "docs/rpc.md", "docs/sessions.md"} {
		doc := fenced.ReplaceAllString(readDoc(t, rel), "")
		for _, m := range backticked.FindAllStringSubmatch(doc, -1) {
			w := word.FindString(m[1])
			if w == "" || known[w] {
				continue
			}
			t.Errorf("%s mentions `%s`, which is not in package vocab", rel, m[1])
		}
	}
}

// TestProviderNamesMatchTheDocument: the providers table of
// docs/span-model.md is the mapping, and every other Pi 1.6.0 provider id
// keeps its own name.
func TestProviderNamesMatchTheDocument(t *testing.T) {
	doc := readDoc(t, "docs/span-model.md")
	mapped := map[string]bool{}
	for _, row := range table(t, doc, "### Providers") {
		want := ticks(row[1])
		ids := ticks(row[0])
		if strings.HasPrefix(row[0], "anything else") {
			continue
		}
		if len(want) != 1 {
			t.Fatalf("bad row %q", row)
		}
		for _, id := range ids {
			mapped[id] = true
			if got := vocab.ProviderName(id); got != want[0] {
				t.Errorf("ProviderName(%q) = %q, the document says %q", id, got, want[0])
			}
		}
	}
	// Pi 1.6.0's KnownProvider (pi-ai dist/types.d.ts).
	known := []string{"amazon-bedrock", "ant-ling", "anthropic", "google", "google-vertex", "openai", "azure",
		"openai-codex", "radius", "typesafe", "nvidia", "deepseek", "github-copilot", "xai", "groq", "cerebras",
		"openrouter", "vercel-ai-gateway", "zai", "zai-coding-cn", "mistral", "minimax", "minimax-cn",
		"moonshotai", "moonshotai-cn", "huggingface", "fireworks", "together", "baseten", "opencode",
		"opencode-go", "kimi-coding", "meta", "cloudflare-workers-ai", "cloudflare-ai-gateway",
		"qwen-token-plan", "qwen-token-plan-cn", "qwen-token-plan-individual", "qwen-token-plan-individual-cn",
		"xiaomi", "xiaomi-token-plan-cn", "xiaomi-token-plan-ams", "xiaomi-token-plan-sgp", "fake", ""}
	for _, id := range known {
		if !mapped[id] && vocab.ProviderName(id) != id {
			t.Errorf("ProviderName(%q) = %q, but the document does not map it", id, vocab.ProviderName(id))
		}
	}
	if len(mapped) < 10 {
		t.Fatalf("only %d mapped ids read from the document", len(mapped))
	}
}
