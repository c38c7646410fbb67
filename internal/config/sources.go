package config

import (
	"flag"
	"strings"
)

// sources answers "what was this setting given as, and where".
type sources struct {
	getenv func(string) string
	flags  map[string]string
	lists  map[string][]string
}

// newSources reads back the flags given on fs (registered with register;
// fs may be nil) and looks the environment up through getenv (nil: an empty
// environment).
func newSources(fs *flag.FlagSet, getenv func(string) string) *sources {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	s := &sources{getenv: getenv, flags: map[string]string{}, lists: map[string][]string{}}
	if fs != nil {
		fs.Visit(func(f *flag.Flag) {
			switch v := f.Value.(type) {
			case *textValue:
				s.flags[f.Name] = v.text
			case *listValue:
				s.lists[f.Name] = *v
			}
		})
	}
	return s
}

// get looks a setting up: its flag, then its variables.
func (s *sources) get(row *setting) (val, from string, ok bool) {
	return s.lookup([]string{row.flag}, row.envs...)
}

// lookup returns the first of the flags, then the first of the environment
// variables, that is set to something non-empty, and the name it came from
// ("--flag" or "ENV"). An empty environment variable counts as unset, as the
// OpenTelemetry specification asks.
func (s *sources) lookup(flags []string, envs ...string) (val, from string, ok bool) {
	for _, f := range flags {
		if v, set := s.flags[f]; set {
			return strings.TrimSpace(v), "--" + f, true
		}
	}
	for _, e := range envs {
		if v := strings.TrimSpace(s.getenv(e)); v != "" {
			return v, e, true
		}
	}
	return "", "", false
}
