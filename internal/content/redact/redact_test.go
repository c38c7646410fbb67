package redact

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusEntry is one line of testdata/secrets.txt: a realistic context and
// the secret inside it, separated by a TAB.
type corpusEntry struct {
	line    int
	context string
	secret  string
}

func readSecrets(t testing.TB) []corpusEntry {
	t.Helper()
	f, err := os.Open("testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		ctx, secret, ok := strings.Cut(sc.Text(), "\t")
		if !ok || secret == "" || !strings.Contains(ctx, secret) {
			t.Fatalf("secrets.txt:%d: want CONTEXT<TAB>SECRET with SECRET inside CONTEXT", n)
		}
		out = append(out, corpusEntry{n, ctx, secret})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("secrets.txt has %d entries; it should cover every rule", len(out))
	}
	return out
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

func mustNew(t testing.TB, opts ...Option) *Redactor {
	t.Helper()
	r, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCorpusSecretsAreRemoved(t *testing.T) {
	r := mustNew(t, WithMaxLength(4096))
	for _, e := range readSecrets(t) {
		got := r.String(e.context)
		if strings.Contains(got, e.secret) {
			t.Errorf("secrets.txt:%d: secret survived:\n in:  %s\n out: %s", e.line, e.context, got)
			continue
		}
		if !strings.Contains(got, "[REDACTED:") {
			t.Errorf("secrets.txt:%d: no marker in %q", e.line, got)
		}
		// The tail of a secret must not survive either (a rule stopping early).
		if tail := e.secret[len(e.secret)*2/3:]; len(tail) >= 6 && strings.Contains(got, tail) {
			t.Errorf("secrets.txt:%d: tail %q of the secret survived in %q", e.line, tail, got)
		}
	}
}

func TestCorpusSecretsAreRemovedInsideLargerText(t *testing.T) {
	// The same secrets deep inside a multi-line tool output, all at once.
	entries := readSecrets(t)
	var b strings.Builder
	for i, e := range entries {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(" ok\n")
		b.WriteString(e.context)
		b.WriteString("\n")
	}
	got := mustNew(t).Redact(b.String())
	for _, e := range entries {
		if strings.Contains(got, e.secret) {
			t.Errorf("secrets.txt:%d: secret survived in combined text", e.line)
		}
	}
}

func TestBenignTextIsKept(t *testing.T) {
	r := mustNew(t)
	for i, line := range readLines(t, "testdata/benign.txt") {
		if got := r.String(line); got != line {
			t.Errorf("benign.txt:%d changed:\n in:  %s\n out: %s", i+1, line, got)
		}
	}
}

func TestRedactedIsStable(t *testing.T) {
	r := mustNew(t)
	for _, e := range readSecrets(t) {
		once := r.Redact(e.context)
		if twice := r.Redact(once); twice != once {
			t.Errorf("secrets.txt:%d: redacting again changed %q into %q", e.line, once, twice)
		}
	}
}

func TestMarkersKeepContext(t *testing.T) {
	r := mustNew(t)
	tests := []struct{ in, want string }{
		{"export OPENAI_API_KEY=sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z then run",
			"export OPENAI_API_KEY=[REDACTED:openai-key] then run"},
		{"key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe here",
			"key [REDACTED:anthropic-key] here"},
		{"curl -H 'Authorization: Bearer 0123456789abcdefghijKLMN' https://x",
			"curl -H 'Authorization: Bearer [REDACTED:authorization]' https://x"},
		{"Authorization: Basic ZGVwbG95OnMzY3JldA==",
			"Authorization: Basic [REDACTED:authorization]"},
		{`{"username": "admin", "password": "hunter2 hunter2"}`,
			`{"username": "admin", "password": "[REDACTED:password]"}`},
		{"DB_PASSWORD='p4ss w0rd' ./migrate",
			"DB_PASSWORD='[REDACTED:password]' ./migrate"},
		{"https://deploy:Sup3rS3cret@git.acme.dev/app.git",
			"https://deploy:[REDACTED:url-password]@git.acme.dev/app.git"},
		{"id=AKIAQWERTYUIOPASDFGH region=eu-west-1",
			"id=[REDACTED:aws-access-key-id] region=eu-west-1"},
		{"?page=2&access_token=abc123def456&sort=asc",
			"?page=2&access_token=[REDACTED:token]&sort=asc"},
		{"max_tokens=4096 token=ab12cd34", "max_tokens=4096 token=[REDACTED:token]"},
		{"git remote -v: https://ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789@github.com/a/b",
			"git remote -v: https://[REDACTED:github-token]@github.com/a/b"},
		{`{\"api_key\": \"q1w2e3r4t5y6\"}`, `{\"api_key\": \"[REDACTED:api-key]\"}`},
		{"ok: https://hooks.slack.com/services/T0000/B0000/XXXXXXXX done",
			"ok: https://hooks.slack.com/services/[REDACTED:slack-webhook] done"},
		{"Bearer abcdefghijklmnopqrstuvwxyz", "Bearer [REDACTED:bearer-token]"},
		{"Bearer of bad news", "Bearer of bad news"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q)\n got  %q\n want %q", tt.in, got, tt.want)
		}
	}
}

func TestPrivateKeyBlocks(t *testing.T) {
	body := "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq8Zr1Xv0b4mJ2kq9Pw3sT6uV0yX5aB8cD1eF4gH7iJ0kL3mN6oP9\n"
	tests := []struct {
		name, in, wantPrefix, wantSuffix string
	}{
		{"multi-line",
			"before\n-----BEGIN RSA PRIVATE KEY-----\n" + body + "-----END RSA PRIVATE KEY-----\nafter",
			"before\n[REDACTED:private-key]", "\nafter"},
		{"pgp",
			"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + body + "=AbCd\n-----END PGP PRIVATE KEY BLOCK-----",
			"[REDACTED:private-key]", ""},
		{"unterminated",
			"cat key.pem | head\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + body,
			"cat key.pem | head\n[REDACTED:private-key]", ""},
	}
	r := mustNew(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Redact(tt.in)
			if strings.Contains(got, "MIIEvQIBADAN") || strings.Contains(got, "L3mN6oP9") {
				t.Fatalf("key material survived: %q", got)
			}
			if !strings.HasPrefix(got, tt.wantPrefix) || !strings.HasSuffix(got, tt.wantSuffix) {
				t.Fatalf("got %q, want prefix %q and suffix %q", got, tt.wantPrefix, tt.wantSuffix)
			}
		})
	}
	// Two keys in one text stay two markers, with the text between them kept.
	two := "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\nmiddle\n-----BEGIN EC PRIVATE KEY-----\nBBBB\n-----END EC PRIVATE KEY-----"
	if got, want := r.Redact(two), "[REDACTED:private-key]\nmiddle\n[REDACTED:private-key]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestMaxLength(t *testing.T) {
	r := mustNew(t, WithMaxLength(10))
	tests := []struct{ in, want string }{
		{"short", "short"},
		{"exactly 10", "exactly 10"},
		{"0123456789abc", "0123456789…[truncated 3 bytes]"},
		// "é" is two bytes at offsets 9-10: the cut backs off to 9.
		{"abcdefghié and more", "abcdefghi…[truncated 11 bytes]"},
		// "日" is three bytes at 8-10.
		{"abcdefgh日本語", "abcdefgh…[truncated 9 bytes]"},
	}
	for _, tt := range tests {
		got := r.String(tt.in)
		if got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%q) = %q is not valid UTF-8", tt.in, got)
		}
	}
	// Redact never truncates.
	if got := r.Redact("0123456789abc"); got != "0123456789abc" {
		t.Errorf("Redact truncated: %q", got)
	}
	for _, n := range []int{0, -1} {
		long := strings.Repeat("y", 10000)
		if got := mustNew(t, WithMaxLength(n)).String(long); got != long {
			t.Errorf("WithMaxLength(%d) truncated to %d bytes", n, len(got))
		}
	}
}

func TestTruncationNeverExposesPartOfASecret(t *testing.T) {
	secret := "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
	for cut := 1; cut < 60; cut++ {
		r := mustNew(t, WithMaxLength(cut))
		for _, in := range []string{
			"token " + secret + " end",
			"x\ntoken " + secret + "\n" + strings.Repeat("z", 100),
		} {
			got := r.String(in)
			for i := 0; i+8 <= len(secret); i++ {
				if strings.Contains(got, secret[i:i+8]) {
					t.Fatalf("max %d: %q exposes %q", cut, got, secret[i:i+8])
				}
			}
		}
	}
}

func TestStringKeepsWhatRedactWouldKeep(t *testing.T) {
	// String skips lines past the cut; the kept text must be the same as
	// redacting everything first.
	var b strings.Builder
	for _, e := range readSecrets(t) {
		b.WriteString(e.context)
		b.WriteString("\n")
	}
	all := b.String()
	full := mustNew(t).Redact(all)
	for _, n := range []int{1, 17, 100, 1000, 4000, len(all) / 2, len(all) - 1} {
		got := mustNew(t, WithMaxLength(n)).String(all)
		if len(full) <= n {
			if got != full {
				t.Fatalf("max %d: got %q, want the whole redacted text", n, got)
			}
			continue
		}
		kept, _, ok := strings.Cut(got, "…[truncated ")
		if !ok {
			t.Fatalf("max %d: no truncation marker", n)
		}
		if !strings.HasPrefix(full, kept) {
			t.Fatalf("max %d: kept text differs from the fully redacted text:\n%q", n, kept)
		}
		if len(kept) > n || len(kept) < n-3 {
			t.Fatalf("max %d: kept %d bytes", n, len(kept))
		}
	}
}

func TestUserPatterns(t *testing.T) {
	r := mustNew(t, WithPatterns(`ACME-[0-9]{6}`, `employee=(?P<secret>[a-z]+)`))
	got := r.Redact("ticket ACME-123456 for employee=jdoe, ACME-12 stays")
	want := "ticket [REDACTED:custom] for employee=[REDACTED:custom], ACME-12 stays"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// User patterns see the whole text, so they may span lines.
	r = mustNew(t, WithPatterns(`(?s)BEGIN NOTE.*?END NOTE`))
	if got := r.Redact("a\nBEGIN NOTE\nprivate\nEND NOTE\nb"); got != "a\n[REDACTED:custom]\nb" {
		t.Fatalf("got %q", got)
	}
}

func TestBadPatterns(t *testing.T) {
	for _, p := range []string{`(unclosed`, `a{2,1}`, `x*`, `|`} {
		_, err := New(WithPatterns(`fine`, p))
		if err == nil {
			t.Errorf("New accepted %q", p)
			continue
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name the pattern %q", err, p)
		}
	}
}

func TestOccurrences(t *testing.T) {
	text := "foo bar\nbaz barfoo\nfoo"
	o := newOccurrences(text, []string{"foo", "bar", "zzz"})
	var got []int
	for from := 0; ; {
		p := o.next(from)
		if p < 0 {
			break
		}
		got = append(got, p)
		from = p + 1
	}
	want := []int{0, 4, 12, 15, 19}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("export TOKEN=abc123\npassword: x", 8)
	f.Add("-----BEGIN PRIVATE KEY-----\nAAAA", 3)
	f.Add("héllo wörld sk-Ab3dEf6hIj9kLm2nOp5qRs8t", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 200
		r := mustNew(t, WithMaxLength(n))
		got := r.String(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q: invalid UTF-8", s, got)
		}
		if n > 0 {
			kept, _, _ := strings.Cut(got, "…[truncated ")
			if len(kept) > n {
				t.Fatalf("kept %d bytes, max %d", len(kept), n)
			}
		}
		if r.Redact(r.Redact(s)) != r.Redact(s) {
			t.Fatalf("Redact is not stable on %q", s)
		}
	})
}

func TestSensitiveKey(t *testing.T) {
	tests := []struct {
		name, marker string
	}{
		{"password", "[REDACTED:password]"},
		{"DB_PASSWORD", "[REDACTED:password]"},
		{"db_pass", "[REDACTED:password]"},
		{"apiKey", "[REDACTED:api-key]"},
		{"x-api-key", "[REDACTED:api-key]"},
		{"access_token", "[REDACTED:token]"},
		{"client_secret", "[REDACTED:secret]"},
		{"aws_secret_access_key", "[REDACTED:aws-secret-key]"},
		{"Authorization", "[REDACTED:authorization]"},
		{"Set-Cookie", "[REDACTED:cookie]"},
		{"auth", "[REDACTED:auth]"},
		{"credentials", "[REDACTED:credential]"},
		{"max_tokens", ""},
		{"token_type", ""},
		{"bypass", ""},
		{"author", ""},
		{"path", ""},
		{"command", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := SensitiveKey(tt.name)
		if got != tt.marker || ok != (tt.marker != "") {
			t.Errorf("SensitiveKey(%q) = %q, %v; want %q", tt.name, got, ok, tt.marker)
		}
	}
}
