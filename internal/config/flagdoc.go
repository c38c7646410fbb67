package config

import (
	"flag"
	"strings"
)

// The groups flags are shown in, in order, for help and docs.
const (
	GroupDestination = "Where telemetry goes"
	GroupCapture     = "What is captured"
	GroupOTLP        = "OTLP connection"
	GroupTuning      = "Tuning"
)

// Groups lists the groups in the order help shows them.
var Groups = []string{GroupDestination, GroupCapture, GroupOTLP, GroupTuning}

// FlagDoc is one flag as help and docs show it: all of it comes from the
// settings table, so the two cannot drift apart.
type FlagDoc struct {
	Name        string
	Group       string
	Placeholder string   // "URL", "DURATION"; "" for a boolean
	Text        string   // what it does, without the variables and default
	Envs        []string // the environment variables, in precedence order
	Default     string   // "" when there is none to state
	Boolean     bool
}

// Flags describes every flag RegisterFlags defines, in table order.
func Flags() []FlagDoc {
	docs := make([]FlagDoc, 0, len(settings))
	for i := range settings {
		s := &settings[i]
		d := FlagDoc{Name: s.flag, Group: s.group, Envs: s.envs, Default: s.defaultText(), Boolean: s.parse == asBool}
		d.Placeholder, d.Text = placeholder(s.usage)
		for _, n := range s.notes() {
			d.Text += "; " + n
		}
		docs = append(docs, d)
	}
	return docs
}

// DescribeFlag describes a flag defined elsewhere (a command's own) the
// same way; its usage follows the same conventions.
func DescribeFlag(f *flag.Flag, group string) FlagDoc {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	boolean := ok && b.IsBoolFlag()
	d := describe(f.Name, f.Usage, boolean)
	d.Group = group
	if d.Placeholder == "" && !boolean {
		name, _ := flag.UnquoteUsage(f)
		d.Placeholder = strings.ToUpper(name)
	}
	if d.Default == "" && !boolean && f.DefValue != "" && f.DefValue != "0" {
		d.Default = f.DefValue
	}
	return d
}

// placeholder takes the `PLACEHOLDER` out of a usage text, as package flag
// reads it, and drops the words that only name it.
func placeholder(usage string) (name, text string) {
	before, rest, ok := strings.Cut(usage, "`")
	name, after, ok2 := strings.Cut(rest, "`")
	if !ok || !ok2 {
		return "", usage
	}
	usage = before + name + after
	// "…, a DURATION" only names the placeholder: the flag line shows it.
	for _, a := range []string{", a ", ", an ", ", "} {
		usage = strings.Replace(usage, a+name, "", 1)
	}
	return name, usage
}

// describe splits the usage of a command's own flag: a `PLACEHOLDER` in
// backquotes, then the trailing "(VAR, VAR; default X; note)".
func describe(name, usage string, boolean bool) FlagDoc {
	d := FlagDoc{Name: name, Boolean: boolean}
	d.Placeholder, usage = placeholder(usage)
	i := strings.LastIndex(usage, " (")
	if i < 0 || !strings.HasSuffix(usage, ")") || !isEnvName(firstWord(usage[i+2:])) {
		d.Text = usage
		return d
	}
	d.Text = usage[:i]
	var notes []string
	for n, part := range strings.Split(strings.TrimSuffix(usage[i+2:], ")"), "; ") {
		switch {
		case n == 0:
			for _, w := range strings.Split(part, ", ") {
				if isEnvName(w) {
					d.Envs = append(d.Envs, w)
				} else {
					notes = append(notes, w)
				}
			}
		case strings.HasPrefix(part, "default"):
			d.Default = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(part, "default"), ":"))
		default:
			notes = append(notes, part)
		}
	}
	if len(notes) > 0 {
		d.Text += "; " + strings.Join(notes, "; ")
	}
	return d
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, ",;) "); i >= 0 {
		return s[:i]
	}
	return s
}

func isEnvName(s string) bool {
	return (strings.HasPrefix(s, "OTEL_") || strings.HasPrefix(s, "PI_OTEL_")) &&
		!strings.ContainsFunc(s, func(c rune) bool { return !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') })
}
