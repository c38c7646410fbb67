// Package errtext decides what an error message may say in telemetry.
//
// Provider and gateway errors echo request headers, keys and passwords, and
// Pi's own errors echo prompts and commands. So without content capture a
// span keeps only what is safe by construction: a class, the HTTP status,
// and the provider's error type and code when they are plain identifiers.
// With content capture the whole text goes through the content redactor.
package errtext

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
)

// Scrubber redacts and bounds captured text; the content capturer is one.
type Scrubber interface {
	Scrub(s string) string
}

// Withheld is the text of an error with nothing safe to say.
const Withheld = "error text withheld (--capture-content keeps it, redacted)"

// Text is what a span's status or error attribute says about msg: with
// content capture (s non-nil) the scrubbed text, else Summary, else the
// fallback (a class the caller knows), else Withheld.
func Text(msg string, s Scrubber, fallback string) string {
	if s != nil {
		return s.Scrub(msg)
	}
	return cmp.Or(Summary(msg), fallback, Withheld)
}

// Class is a low-cardinality error.type for a provider error message.
func Class(msg string) string {
	k := kind(msg)
	if k == "context_overflow" {
		return k
	}
	return cmp.Or(status(msg), k, "_OTHER")
}

// kind names the failure from the words Pi and its providers use.
func kind(msg string) string {
	msg = strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "context window"), strings.Contains(msg, "context length"),
		strings.Contains(msg, "context_length"):
		return "context_overflow"
	case strings.Contains(msg, "terminated"):
		return "terminated"
	case strings.Contains(msg, "overloaded"):
		return "overloaded"
	case strings.Contains(msg, "abort"):
		return "aborted"
	case strings.Contains(msg, "timed out"), strings.Contains(msg, "timeout"):
		return "timeout"
	}
	return ""
}

var (
	// JSON fields whose values name an error kind, never a value.
	fieldRE = regexp.MustCompile(`"(?:type|code|status)"\s*:\s*"([^"]{1,64})"`)
	// Node's network error codes, as undici and libuv print them.
	netRE = regexp.MustCompile(`\b(?:UND_ERR_[A-Z_]+|E(?:CONNRESET|CONNREFUSED|CONNABORTED|TIMEDOUT|NOTFOUND|AI_AGAIN|PIPE|HOSTUNREACH|NETUNREACH|PROTO))\b`)
	// An identifier: one case, letters and underscores. Keys and tokens
	// carry digits or mixed case, so this shape cannot hold one.
	identRE = regexp.MustCompile(`^(?:[a-z]+(?:[_.][a-z]+)*|[A-Z]+(?:_[A-Z]+)*)$`)
)

// Summary is the safe part of msg: the HTTP status, the class when it
// says more, and the provider's error identifiers, e.g.
// "529 overloaded_error" or "terminated UND_ERR_SOCKET". It is "" when
// msg holds none of these.
func Summary(msg string) string {
	var parts []string
	add := func(s string) {
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if st := status(msg); st != "" {
		add(st)
	}
	for _, m := range fieldRE.FindAllStringSubmatch(msg, 8) {
		// Anthropic wraps every error in {"type":"error",...}.
		if v := m[1]; v != "error" && identRE.MatchString(v) {
			add(v)
		}
	}
	if k := kind(msg); k != "" && !strings.Contains(strings.Join(parts, " "), k) {
		add(k)
	}
	for _, c := range netRE.FindAllString(msg, 4) {
		add(c)
	}
	return strings.Join(parts, " ")
}

// status is the HTTP status code that leads msg, or the part after its
// first ": ", as Pi's providers print it ("529: {...}", "429 Too Many
// Requests", "Summarization failed: 400 {...}").
func status(msg string) string {
	if s := leadingStatus(msg); s != "" {
		return s
	}
	if i := strings.Index(msg, ": "); i >= 0 {
		return leadingStatus(msg[i+2:])
	}
	return ""
}

func leadingStatus(msg string) string {
	if len(msg) < 3 || msg[0] < '1' || msg[0] > '5' || !isDigit(msg[1]) || !isDigit(msg[2]) {
		return ""
	}
	if len(msg) > 3 && (isDigit(msg[3]) || isLetter(msg[3]) || msg[3] == '.') {
		return "" // a longer number or a word, not a status
	}
	return msg[:3]
}

func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isLetter(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
