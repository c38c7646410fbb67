package redact

import (
	"regexp"
	"strings"
)

var (
	sensitiveKey = regexp.MustCompile(`(?i)(?:` + secretWords + `|authorization|cookie)$`)
	// "pass" and "auth" alone or at the end of a compound name (DB_PASS),
	// but not inside a word (bypass, author).
	shortKey = regexp.MustCompile(`(?i)(?:^|[_.\-])(?:pass|auth)$`)
)

// SensitiveKey reports whether a structured field named name (a JSON object
// key, a header name) holds a credential, and returns the marker to put in
// place of its value. A value found under such a key is a secret whatever it
// looks like, which pattern matching on the value alone cannot know.
func SensitiveKey(name string) (marker string, ok bool) {
	name = strings.TrimSpace(name)
	if !sensitiveKey.MatchString(name) && !shortKey.MatchString(name) {
		return "", false
	}
	kind := labelFromKey(name)
	switch k := strings.ToLower(name); {
	case strings.HasSuffix(k, "authorization"):
		kind = "authorization"
	case strings.HasSuffix(k, "cookie"):
		kind = "cookie"
	}
	return markerPrefix + ":" + kind + "]", true
}
