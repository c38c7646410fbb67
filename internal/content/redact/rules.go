package redact

import (
	"regexp"
	"slices"
	"strings"
)

// A rule finds one kind of secret. Every secret shape starts at, or is keyed
// by, a literal hint ("sk-", "AKIA", "password"…). The rule looks the hints
// up with strings.Index and runs its regular expression, anchored, only where
// a hint occurs: the cost is a substring search plus a few steps per
// occurrence, not a regex scan of the whole text. Go's RE2 engine is
// linear-time, so no pattern can backtrack catastrophically either.
type rule struct {
	kind  string
	hints []string
	fold  bool // hints are lower case and looked up in ASCII-lowered text
	word  bool // a hint must not follow a letter, digit or underscore

	// back, if set, extends the match backwards from the hint over the
	// bytes it accepts (a key name before "password", a URL scheme before
	// "://"); accept then vets the extended start.
	back   func(byte) bool
	accept func(s string, start, hint int) bool

	re     *regexp.Regexp // anchored at the hint; groups "s…" hold the secret, else the whole match
	secret []int
	key    int                 // index of the group ending the key name, or -1
	label  func(string) string // marker label from the key name
	keep   func(string) bool   // reports a value that is plainly not a secret
}

const (
	markerPrefix = "[REDACTED"
	// backLimit bounds the backward scan so long runs of key bytes cannot
	// make matching quadratic.
	backLimit = 256
	// window is the first slice of text an anchored match sees; it grows
	// only when a match reaches its end.
	window = 256
)

func marker(kind string) string { return markerPrefix + ":" + kind + "]" }

func newRule(kind, expr string, hints ...string) *rule {
	re := regexp.MustCompile(`^(?:` + expr + `)`)
	r := &rule{kind: kind, hints: hints, re: re, key: re.SubexpIndex("key")}
	for i, name := range re.SubexpNames() {
		if strings.HasPrefix(name, "s") {
			r.secret = append(r.secret, i)
		}
	}
	if len(r.secret) == 0 {
		r.secret = []int{0}
	}
	return r
}

func (r *rule) folded() *rule                        { r.fold = true; return r }
func (r *rule) wordStart() *rule                     { r.word = true; return r }
func (r *rule) keeping(f func(string) bool) *rule    { r.keep = f; return r }
func (r *rule) labelled(f func(string) string) *rule { r.label = f; return r }
func (r *rule) backwards(f func(byte) bool, accept func(string, int, int) bool) *rule {
	r.back, r.accept = f, accept
	return r
}

// apply returns s with this rule's secrets replaced. lower is the
// ASCII-lowered s when the rule folds case.
func (r *rule) apply(s, lower string) string {
	text := s
	if r.fold {
		text = lower
	}
	var b strings.Builder
	last := 0 // end of the last replacement
	lineEnd := -1
	hints := newOccurrences(text, r.hints)
	for from := 0; ; {
		pos := hints.next(from)
		if pos < 0 {
			break
		}
		from = pos + 1
		if r.word && pos > 0 && isWordByte(s[pos-1]) {
			continue
		}
		start := pos
		if r.back != nil {
			for start > last && pos-start < backLimit && r.back(s[start-1]) {
				start--
			}
			if r.accept != nil && !r.accept(s, start, pos) {
				continue
			}
		}
		// Positions only grow, so the line end found for an earlier hint
		// holds until a hint lies past it.
		if pos > lineEnd {
			lineEnd = len(s)
			if i := strings.IndexByte(s[pos:], '\n'); i >= 0 {
				lineEnd = pos + i
			}
		}
		m := r.matchAt(s, pos, lineEnd)
		if m == nil {
			continue
		}
		from = pos + max(m[1], 1)
		kind := r.kind
		if r.label != nil && r.key > 0 && m[2*r.key] >= 0 {
			kind = r.label(s[start : pos+m[2*r.key+1]])
		}
		for _, g := range r.secret {
			if m[2*g] < 0 || m[2*g] == m[2*g+1] {
				continue
			}
			sp := [2]int{pos + m[2*g], pos + m[2*g+1]}
			v := s[sp[0]:sp[1]]
			if strings.HasPrefix(v, markerPrefix) || (r.keep != nil && r.keep(v)) {
				continue
			}
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:sp[0]])
			b.WriteString(marker(kind))
			last = sp[1]
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchAt runs the anchored expression at pos on a window of s that grows
// while the match runs into the window's end.
func (r *rule) matchAt(s string, pos, limit int) []int {
	for w := window; ; w *= 4 {
		end := min(pos+w, limit)
		m := r.re.FindStringSubmatchIndex(s[pos:end])
		// A match close to the window's end may continue past it.
		if m == nil || end == limit || pos+m[1] < end-8 {
			return m
		}
	}
}

// occurrences yields the positions of any of a set of substrings in order.
// Each substring's next position is cached, so a scan stays linear however
// the substrings interleave.
type occurrences struct {
	text string
	subs []string
	pos  []int // next position of subs[i], -1 if none, -2 if not searched
}

func newOccurrences(text string, subs []string) *occurrences {
	return &occurrences{text: text, subs: subs, pos: slices.Repeat([]int{-2}, len(subs))}
}

// next returns the first position >= from where a substring starts, or -1.
func (o *occurrences) next(from int) int {
	first := -1
	for i, sub := range o.subs {
		p := o.pos[i]
		if p == -1 {
			continue
		}
		if p < from {
			if from > len(o.text) {
				o.pos[i] = -1
				continue
			}
			j := strings.Index(o.text[from:], sub)
			if j < 0 {
				o.pos[i] = -1
				continue
			}
			p = from + j
			o.pos[i] = p
		}
		if first < 0 || p < first {
			first = p
		}
	}
	return first
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isKeyByte(c byte) bool { return isWordByte(c) || c == '.' || c == '-' }

func isSchemeByte(c byte) bool { return isWordByte(c) && c != '_' || c == '+' || c == '.' || c == '-' }

// builtins run in order: specific token shapes first, so they get precise
// labels; generic key=value rules last, skipping values already redacted.
var builtins = []*rule{
	newRule("anthropic-key", `sk-ant-[A-Za-z0-9_\-]{20,}`, "sk-ant-").wordStart(),
	// sk- keys: OpenAI (sk-, sk-proj-, sk-svcacct-), OpenRouter, DeepSeek and
	// other OpenAI-compatible providers. Real keys are random, so they mix
	// letters and digits; long kebab-case words do not.
	newRule("openai-key", `sk-[A-Za-z0-9_\-]{20,}`, "sk-").wordStart().keeping(notLettersAndDigits),
	newRule("google-api-key", `AIza[0-9A-Za-z_\-]{35}`, "AIza").wordStart(),
	newRule("google-oauth-token", `ya29\.[0-9A-Za-z_\-]{20,}`, "ya29.").wordStart(),
	newRule("xai-key", `xai-[A-Za-z0-9]{40,}`, "xai-").wordStart(),
	newRule("groq-key", `gsk_[A-Za-z0-9]{40,}`, "gsk_").wordStart(),
	newRule("huggingface-token", `hf_[A-Za-z0-9]{30,}`, "hf_").wordStart(),
	newRule("aws-access-key-id", `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`, "AKIA", "ASIA", "ABIA", "ACCA").wordStart(),
	newRule("github-token", `gh[pousr]_[A-Za-z0-9]{30,}`, "ghp_", "gho_", "ghu_", "ghs_", "ghr_").wordStart(),
	newRule("github-token", `github_pat_[A-Za-z0-9_]{40,}`, "github_pat_").wordStart(),
	newRule("gitlab-token", `glpat-[A-Za-z0-9_\-]{20,}`, "glpat-").wordStart(),
	newRule("npm-token", `npm_[A-Za-z0-9]{36}\b`, "npm_").wordStart(),
	newRule("stripe-key", `[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`, "sk_live_", "sk_test_", "rk_live_", "rk_test_").wordStart(),
	newRule("slack-token", `xox[abposr]-[A-Za-z0-9\-]{10,}`, "xox").wordStart(),
	newRule("slack-token", `xapp-[0-9]-[A-Za-z0-9\-]{10,}`, "xapp-").wordStart(),
	newRule("slack-webhook", `hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/\-]+)`, "hooks.slack.com/"),
	newRule("discord-webhook", `discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<s>[A-Za-z0-9_\-]+)`,
		"discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
	newRule("jwt", `eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*`, "eyJ").wordStart(),

	// Authorization and Proxy-Authorization headers, any scheme.
	newRule("authorization",
		`(?i)authorization(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|sso-key)[ \t]+)?(?P<s>[^\s"'\\,;]+)`,
		"authorization").folded().wordStart(),
	// A bearer token outside a header. An English word after "bearer" is left
	// alone: real tokens contain digits or are long.
	newRule("bearer-token", `(?i)bearer[ \t]+(?P<s>[a-z0-9._~+/\-]+=*)`, "bearer").folded().wordStart().keeping(wordLike),
	newRule("cookie", `(?i)cookie(?:\\?["'])?[ \t]*:[ \t]*(?P<s>[^\r\n"'\\]+)`, "cookie").folded().wordStart(),
	// Credentials in a URL: scheme://user:password@host.
	newRule("url-password", `://[^\s:/?#@"'<>\[\]]*:(?P<s>[^\s/?#"'<>]+)@`, "://").
		backwards(isSchemeByte, func(s string, start, hint int) bool {
			return start < hint && isLetter(s[start])
		}),
	// --password VALUE and friends on a command line.
	newRule("password",
		`(?i)--(?P<key>password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token|access-token)[ \t]+(?:"(?P<s1>[^"\n]*)"|'(?P<s2>[^'\n]*)'|(?P<s3>[^\s"'\-][^\s"']*))`,
		"--pass", "--token", "--api", "--secret", "--client-secret", "--auth-token", "--access-token").
		folded().wordStart().labelled(labelFromKey).keeping(placeholder),
	// curl -u user:password
	newRule("password", `(?:-u|--user)[ \t]+["']?[^\s:"']+:(?P<s>[^\s"']+)`, "-u ", "-u\t", "--user ", "--user\t").wordStart(),
	// .netrc: machine HOST login USER password SECRET
	newRule("password", `(?i)machine[ \t]+\S+(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]+password[ \t]+(?P<s>\S+)`, "machine").folded().wordStart(),
	// key = value, key: value, "key": "value", KEY="value", ?key=value&…
	// The key must end with the sensitive word, so max_tokens or token_type
	// do not count.
	newRule("secret",
		`(?i)(?P<key>`+secretWords+`)`+assignedValue,
		"password", "passwd", "passphrase", "secret", "token", "credential",
		"apikey", "api_key", "api-key", "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key").
		folded().backwards(isKeyByte, nil).labelled(labelFromKey).keeping(placeholder),
	// DB_PASS=…, "auth": "…" (Docker config): short words that are keys only
	// when they stand alone or end a compound name, unlike "bypass".
	newRule("secret", `(?i)(?P<key>pass|auth)`+assignedValue, "pass", "auth").
		folded().backwards(isKeyByte, func(s string, start, hint int) bool {
		return start == hint || strings.IndexByte("_.-", s[hint-1]) >= 0
	}).labelled(labelFromKey).keeping(placeholder),
}

// secretWords end the names of keys that hold secrets.
const secretWords = `password|passwd|passphrase|secret(?:[_\-]?(?:access[_\-]?)?key)?|token|api[_\-]?key|access[_\-]?key(?:[_\-]?id)?|private[_\-]?key|credentials?`

// assignedValue follows a key in the generic rules: a separator, then a
// double-quoted (possibly backslash-escaped), single-quoted or bare value.
// A bare value ends at white space, a quote or a delimiter; "&" ends it only
// when a query parameter seems to follow.
const assignedValue = `(?:\\?["'])?[ \t]*(?::=|=>|=|:)[ \t]*` +
	`(?:"(?P<s1>(?:[^"\\\n]|\\.)*)"` +
	`|'(?P<s2>[^'\n]*)'` +
	`|\\"(?P<s3>(?:[^"\\\n]|\\[^"\n])*)\\"` +
	`|(?P<s4>[^\s"'\x60,;&(){}\[\]<>=\\](?:[^\s"'\x60,;&}<>]|&[^a-z_\s])*))`

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// keyLabels name a secret by a word its key contains; the first match wins,
// so the more telling words come first.
var keyLabels = [...]struct{ word, label string }{
	{"pass", "password"}, {"secret", "secret"}, {"token", "token"},
	{"credential", "credential"}, {"api", "api-key"}, {"auth", "auth"},
}

func labelFromKey(key string) string {
	k := strings.ToLower(key)
	if strings.Contains(k, "aws") && strings.Contains(k, "secret") {
		return "aws-secret-key"
	}
	for _, l := range keyLabels {
		if strings.Contains(k, l.word) {
			return l.label
		}
	}
	return "key"
}

// placeholder reports values that name or stand for a secret rather than
// being one: references ($VAR, ${VAR}, {{ .x }}, <your-token>), type names in
// code, booleans, null, and masks such as "****".
func placeholder(v string) bool {
	switch strings.ToLower(v) {
	case "null", "nil", "none", "true", "false", "undefined", "required", "optional",
		"string", "str", "number", "int", "bool", "boolean", "any", "bytes", "object":
		return true
	}
	switch v[0] {
	case '$', '%', '<':
		return true
	}
	if strings.HasPrefix(v, "{{") {
		return true
	}
	return strings.Trim(v, "*xX.•") == ""
}

// notLettersAndDigits reports an sk-… match whose body lacks either letters
// or digits, which a random key would not.
func notLettersAndDigits(v string) bool {
	body := strings.TrimPrefix(v, "sk-")
	return !strings.ContainsAny(body, "0123456789") || strings.Trim(body, "0123456789_-") == ""
}

func wordLike(v string) bool {
	return len(v) < 24 && !strings.ContainsAny(v, "0123456789")
}
