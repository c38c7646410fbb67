package config

import (
	"flag"
	"strings"
)

// RegisterFlags defines pi-otel's telemetry flags on fs, one per row of the
// settings table. Load reads back the ones that were given.
func RegisterFlags(fs *flag.FlagSet) { register(fs, settings) }

// register defines a flag for each setting. Every flag only records the
// text it was given, and Load does the parsing: that keeps flag and
// environment values on one parsing path with one set of error messages.
func register(fs *flag.FlagSet, table []setting) {
	for i := range table {
		s := &table[i]
		if s.parse == asList {
			fs.Var(new(listValue), s.flag, s.flagUsage())
			continue
		}
		fs.Var(&textValue{boolean: s.parse == asBool}, s.flag, s.flagUsage())
	}
}

// textValue records a flag's text as given.
type textValue struct {
	text    string
	boolean bool
}

func (v *textValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *textValue) Set(s string) error { v.text = s; return nil }

// IsBoolFlag lets "--quiet" stand for "--quiet=true".
func (v *textValue) IsBoolFlag() bool { return v.boolean }

// listValue records every occurrence of a repeatable flag.
type listValue []string

func (v *listValue) String() string {
	if v == nil {
		return ""
	}
	return strings.Join(*v, "\n")
}

func (v *listValue) Set(s string) error { *v = append(*v, s); return nil }
