package redact

import (
	"fmt"
	"strings"
	"testing"
)

// toolOutput builds about size bytes of text shaped like a large tool result:
// log and source lines, many mentioning tokens, keys, URLs and passwords
// without secrets, and a real-looking secret every few hundred lines.
func toolOutput(size int, sep string) string {
	lines := []string{
		`2026-11-29T12:00:00.000Z INFO request handled path=/api/v1/items status=200 duration_ms=12`,
		`func (c *Client) refreshToken(ctx context.Context) (*Token, error) {`,
		`	req.Header.Set("Content-Type", "application/json") // see https://example.com/docs`,
		`{"model":"gpt-5","max_tokens":4096,"usage":{"input_tokens":1200,"output_tokens":87}}`,
		`The password must be at least 12 characters; rotate the api key monthly.`,
		`   142 |     const apiKey = process.env.API_KEY ?? "";`,
		`git push -u origin feature/secret-rotation --force-with-lease`,
		`drwxr-xr-x  5 user staff  160 Nov 29 12:00 node_modules/.cache/token-store`,
	}
	secrets := []string{
		`export OPENAI_API_KEY=sk-proj-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0X1c2V3b4N5m6`,
		`curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl"`,
		`DATABASE_URL=postgres://app:S3cr3tPa55w0rd@db.internal:5432/app`,
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i%300 == 299 {
			b.WriteString(secrets[(i/300)%len(secrets)])
		} else {
			b.WriteString(lines[i%len(lines)])
		}
		b.WriteString(sep)
	}
	return b.String()
}

func BenchmarkRedact1MB(b *testing.B) {
	for _, tc := range []struct {
		name string
		text string
	}{
		{"lines", toolOutput(1<<20, "\n")},
		// Minified JSON: one 1 MB line with hints everywhere, the worst case
		// for line-scoped matching.
		{"one-line", toolOutput(1<<20, `\n`)},
	} {
		for _, max := range []int{0, 8 << 10} {
			r, err := New(WithMaxLength(max))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/max=%d", tc.name, max), func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				b.ReportAllocs()
				for b.Loop() {
					_ = r.String(tc.text)
				}
			})
		}
	}
}

// BenchmarkRedactAdversarial feeds 1 MB of repeated hints with no line
// breaks: the shapes that would make a naive matcher quadratic.
func BenchmarkRedactAdversarial(b *testing.B) {
	r, err := New()
	if err != nil {
		b.Fatal(err)
	}
	for _, unit := range []string{
		"-----BEGIN PRIVATE KEY----- ",
		"-----BEGIN RSA PRIVATE KEY-----x-----END CERTIFICATE-----",
		"token=",
		"tokentoken ",
		"a://b:",
		"sk-",
		"machine x ",
		"Bearer ",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_password ",
	} {
		text := strings.Repeat(unit, (1<<20)/len(unit))
		b.Run(strings.TrimSpace(unit[:min(len(unit), 16)]), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_ = r.Redact(text)
			}
		})
	}
}

func BenchmarkRedactShort(b *testing.B) {
	r, err := New(WithMaxLength(4096))
	if err != nil {
		b.Fatal(err)
	}
	text := `{"command":"ls -la ~/projects/app && cat README.md | head -20"}`
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(text)
	}
}
