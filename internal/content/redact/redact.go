// Package redact removes credentials from text before it is put into
// telemetry, and bounds its length.
//
// A Redactor always applies the built-in rules (provider API keys, cloud and
// forge tokens, authorization headers, JWTs, private keys, password-like
// assignments, credentials in URLs) and any extra patterns the user gives.
// Each secret is replaced by a marker such as "[REDACTED:openai-key]"; the
// text around it is kept, so a redacted shell command or config file still
// reads naturally.
//
// Redaction is best effort: it catches the common, recognisable shapes of
// secrets, not every secret. That is why content capture stays off unless
// the user opts in.
package redact

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Redactor replaces secrets in text. It is immutable after New and safe for
// concurrent use.
type Redactor struct {
	user []*pattern // user patterns, matched against the whole text
	max  int
}

type config struct {
	patterns []string
	max      int
}

// Option configures a Redactor.
type Option = option.Option[config]

// WithPatterns adds user regular expressions (RE2 syntax) to the built-in
// rules. A match is replaced by "[REDACTED:custom]"; if the pattern has a
// group named "secret", only that group is replaced.
func WithPatterns(regexes ...string) Option {
	return option.Func[config](func(c *config) { c.patterns = append(c.patterns, regexes...) })
}

// WithMaxLength makes String keep at most n bytes of redacted text, cut on a
// UTF-8 boundary and followed by a marker saying how much was dropped.
// n <= 0 means no limit.
func WithMaxLength(n int) Option {
	return option.Func[config](func(c *config) { c.max = n })
}

// New returns a Redactor with the built-in rules and the given options. It
// fails if a user pattern does not compile or matches the empty string; the
// error names the pattern.
func New(opts ...Option) (*Redactor, error) {
	c := option.Apply(config{}, opts)
	r := &Redactor{max: c.max}
	for _, p := range c.patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: invalid pattern %q: %w", p, err)
		}
		// A pattern that matches nothing at all would put a marker between
		// every two characters.
		if re.MatchString("") {
			return nil, fmt.Errorf("redact: pattern %q matches the empty string", p)
		}
		r.user = append(r.user, &pattern{re: re, secret: max(re.SubexpIndex("secret"), 0)})
	}
	return r, nil
}

// Redact returns s with every secret the Redactor recognises replaced by a
// marker. It does not truncate.
func (r *Redactor) Redact(s string) string {
	s = r.redactWhole(s)
	return redactLines(s)
}

// String redacts s and then truncates it to the configured maximum length.
func (r *Redactor) String(s string) string {
	s = r.redactWhole(s)
	if r.max <= 0 || len(s) <= r.max {
		return r.truncate(redactLines(s), 0)
	}
	// Line-bound rules look at one line at a time, so lines past the cut
	// cannot change the kept text: redact whole lines only until enough text
	// is kept. This keeps String cheap on megabytes of tool output.
	var head strings.Builder
	done := 0
	for done < len(s) && head.Len() < r.max {
		end := done + r.max - head.Len()
		if end >= len(s) {
			end = len(s)
		} else if i := strings.IndexByte(s[end:], '\n'); i >= 0 {
			end += i
		} else {
			end = len(s)
		}
		head.WriteString(redactLines(s[done:end]))
		done = end
	}
	return r.truncate(head.String(), len(s)-done)
}

// redactWhole applies the rules that need the whole text.
func (r *Redactor) redactWhole(s string) string {
	for _, u := range r.user {
		s = u.apply(s)
	}
	return redactPrivateKeys(s)
}

// truncate cuts s to the maximum length; extra is the count of bytes already
// dropped beyond s.
func (r *Redactor) truncate(s string, extra int) string {
	if r.max <= 0 || (len(s) <= r.max && extra == 0) {
		return s
	}
	cut := min(r.max, len(s))
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated " + strconv.Itoa(len(s)-cut+extra) + " bytes]"
}

// redactLines applies the built-in rules, whose matches never cross a line
// end, to s.
func redactLines(s string) string {
	var lower string // ASCII-lowered s, computed on demand
	for _, rl := range builtins {
		if rl.fold && lower == "" && s != "" {
			lower = asciiLower(s)
		}
		if out := rl.apply(s, lower); out != s {
			s = out
			lower = ""
		}
	}
	return s
}

// asciiLower lowers ASCII letters only, so byte offsets in the result match
// those in s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// pattern is a user-supplied expression. Unlike the built-in rules it has no
// hint, so it is matched against the whole text.
type pattern struct {
	re     *regexp.Regexp
	secret int // group to replace; 0 is the whole match
}

func (p *pattern) apply(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*p.secret], m[2*p.secret+1]
		if start < last || start >= end || strings.HasPrefix(s[start:end], markerPrefix) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(marker("custom"))
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
