package redact

import (
	"regexp"
	"strings"
)

var (
	pemBegin = regexp.MustCompile(`^-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`^-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----`)
)

// redactPrivateKeys replaces PEM private key blocks whole, also when their
// newlines are JSON-escaped. A block cut short (no END line, as in truncated
// output) is redacted up to where its base64 body stops.
func redactPrivateKeys(s string) string {
	var b strings.Builder
	last := 0
	end := -1 // cached start of the next END line, len(s) if none
	for from := 0; ; {
		i := strings.Index(s[from:], "-----BEGIN")
		if i < 0 {
			break
		}
		pos := from + i
		from = pos + 1
		h := pemBegin.FindStringIndex(s[pos:min(len(s), pos+window)])
		if h == nil {
			continue
		}
		body := pos + h[1]
		if end < body {
			end = nextPEMEnd(s, body)
		}
		stop := body
		if end < len(s) {
			stop = end + pemEnd.FindStringIndex(s[end:min(len(s), end+window)])[1]
		} else {
			for stop < len(s) && isBase64Byte(s[stop]) {
				stop++
			}
		}
		b.WriteString(s[last:pos])
		b.WriteString(marker("private-key"))
		last, from = stop, stop
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// nextPEMEnd returns the start of the first private key END line at or after
// i, or len(s).
func nextPEMEnd(s string, i int) int {
	for {
		j := strings.Index(s[i:], "-----END")
		if j < 0 {
			return len(s)
		}
		if pemEnd.MatchString(s[i+j : min(len(s), i+j+window)]) {
			return i + j
		}
		i += j + 1
	}
}

func isBase64Byte(c byte) bool {
	return isWordByte(c) && c != '_' || strings.IndexByte("+/=\\ \t\r\n", c) >= 0
}
