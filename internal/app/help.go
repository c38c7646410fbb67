package app

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/pi-otel/pi-otel/internal/config"
)

// commandDoc is what `pi-otel COMMAND --help` says before the flags.
type commandDoc struct {
	about    string
	examples []string // each a command line, then "# what it does" lines
}

var commandDocs = map[string]commandDoc{
	"run": {
		about: `Launches Pi and traces it: one trace per prompt, with a span for each
turn, model call and tool call. In Pi's terminal UI (or -p) Pi keeps the
terminal and pi-otel traces the session files this Pi writes; in json mode
Pi's output passes through to stdout byte for byte and its event stream is
traced. Exits with Pi's exit code.`,
		examples: []string{
			"pi-otel run -- pi",
			"# Pi's terminal UI as always; the traces come when each prompt is answered",
			"pi-otel run -- pi --mode json 'list the files here'",
			"# Pi's events on stdout, the trace as a tree on stderr; no collector needed",
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 pi-otel run -- pi --mode json 'fix the test'",
			"# the same trace sent to a collector or Jaeger over OTLP/gRPC",
			"pi-otel run --traces-file trace.jsonl -- pi --mode json hi > events.jsonl",
			"# spans as OTLP/JSON lines in trace.jsonl, Pi's events in events.jsonl",
		},
	},
	"rpc": {
		about: `Runs Pi in rpc mode as a transparent proxy: your client talks to Pi through
pi-otel's stdin and stdout, unchanged, and every prompt becomes a trace.`,
		examples: []string{
			"pi-otel rpc -- pi --mode rpc",
			"# have your client start this instead of 'pi --mode rpc'; the trace goes to stderr",
			"pi-otel rpc --endpoint http://localhost:4317 -- pi --mode rpc",
			"# each prompt of the session as a trace in your collector",
		},
	},
	"replay": {
		about: `Traces a Pi session file (~/.pi/agent/sessions/...) or a Pi event stream
captured with 'pi --mode json', read from FILE or, with -, from stdin. The
kind of input is told from its content. The console tree goes to stdout.`,
		examples: []string{
			"pi-otel replay ~/.pi/agent/sessions/--home-me-proj--/2026-12-01T07-00-00-000Z_1f2e.jsonl",
			"pi --mode json hi | pi-otel replay -",
			"pi-otel replay --follow --endpoint http://localhost:4317 session.jsonl",
			"# keep tracing a live session as Pi appends to it, until Ctrl-C",
		},
	},
	"watch": {
		about: `Follows every session file Pi writes under DIR (default: Pi's own session
directory, resolved as Pi resolves it), terminal UI included, and traces
each run once it is complete. Keeps its place in every file in a state
file, so a restart traces nothing twice and loses nothing.`,
		examples: []string{
			"pi-otel watch --endpoint http://localhost:4317",
			"# trace new activity from now on, as a service (see examples/watch-systemd)",
			"pi-otel watch --since all --traces-exporter none --metrics-exporter otlp",
			"# turn months of history into metrics, once",
		},
	},
	"report": {
		about: `Totals what Pi spent: cost, tokens (input, output, cache read and write),
runs and runs that ended in error, by day, week, month, session, model,
project, team or skill. It reads Pi's session files (default: Pi's own
session folder, as watch finds it; or the folders and files given) with
watch's own pipeline and nothing exported, so its numbers are the ones the
traces and the pi.cost metric carry: forks' copied entries, subagents and
compaction summaries counted once.`,
		examples: []string{
			"pi-otel report",
			"# a row a day, in the local time zone, with a total",
			"pi-otel report --by model --since 7d",
			"# the last week's spend by model",
			"pi-otel report --by month --tz UTC --json ~/backup/pi-sessions",
			"# months of a backup, as JSON",
		},
	},
	"demo": {
		about: `Traces two real Pi runs shipped inside pi-otel (four parallel tools, two of
them failing; a model error and its retry), so you can see the traces with
nothing else installed, or check that your collector receives them.`,
		examples: []string{
			"pi-otel demo | less",
			"# the tree on stdout, the summary on stderr",
			"pi-otel demo --endpoint http://localhost:4317",
			"# then look for service \"pi\" in Jaeger at http://localhost:16686",
		},
	},
}

// commandGroup is the heading of a command's own flags.
const commandGroup = "Command"

// printHelp writes a command's help: what it does, examples, then its
// flags by group, each with its variables and default.
func printHelp(w io.Writer, name, synopsis string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: pi-otel %s %s\n\n", name, synopsis)
	doc, ok := commandDocs[name]
	if ok {
		fmt.Fprintf(w, "%s\n\n", doc.about)
		if len(doc.examples) > 0 {
			fmt.Fprintln(w, "Examples:")
			for _, e := range doc.examples {
				fmt.Fprintf(w, "  %s\n", e)
			}
			fmt.Fprintln(w)
		}
	}
	shared := map[string]bool{}
	byGroup := map[string][]config.FlagDoc{}
	for _, d := range config.Flags() {
		shared[d.Name] = true
		if fs.Lookup(d.Name) != nil { // report takes only a few
			byGroup[d.Group] = append(byGroup[d.Group], d)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !shared[f.Name] {
			byGroup[commandGroup] = append(byGroup[commandGroup], config.DescribeFlag(f, commandGroup))
		}
	})
	for _, g := range append([]string{commandGroup}, config.Groups...) {
		if len(byGroup[g]) == 0 {
			continue
		}
		title := g
		if g == commandGroup {
			title = "Flags of " + name
		}
		fmt.Fprintf(w, "%s:\n", title)
		for _, d := range byGroup[g] {
			printFlag(w, d)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "A flag wins over its variable, which wins over the default. Durations are")
	fmt.Fprintln(w, "Go durations (5s, 250ms) or milliseconds. More in docs/configuration.md.")
}

func printFlag(w io.Writer, d config.FlagDoc) {
	line := "  --" + d.Name
	if d.Placeholder != "" {
		line += " " + d.Placeholder
	}
	fmt.Fprintln(w, line)
	text := d.Text
	var more []string
	if len(d.Envs) > 0 {
		more = append(more, "env "+strings.Join(d.Envs, ", "))
	}
	if d.Default != "" {
		more = append(more, "default "+d.Default)
	}
	if len(more) > 0 {
		text += " [" + strings.Join(more, "; ") + "]"
	}
	for _, l := range wrap(text, 72) {
		fmt.Fprintf(w, "      %s\n", l)
	}
}

// wrap breaks text into lines of at most width runes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// flagError turns the flag package's error into one line of ours.
func flagError(name string, fs *flag.FlagSet, err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		msg = "unknown flag " + dashes(strings.TrimPrefix(msg, "flag provided but not defined: "))
	case strings.HasPrefix(msg, "flag needs an argument: "):
		msg = "flag " + dashes(strings.TrimPrefix(msg, "flag needs an argument: ")) + " needs a value"
	default:
		// `invalid [boolean ]value "x" for [flag ]-f: why`
		if m := badValue.FindStringSubmatch(msg); m != nil {
			want := m[3]
			if f := fs.Lookup(strings.TrimLeft(m[2], "-")); f != nil {
				d := config.DescribeFlag(f, "")
				switch {
				case d.Boolean:
					want = "want true or false"
				case d.Placeholder == "DURATION":
					want = "want a duration such as 5s or 250ms"
				}
			}
			msg = fmt.Sprintf("flag %s: %s is not valid; %s", dashes(m[2]), m[1], want)
		}
	}
	return fmt.Sprintf("pi-otel %s: %s; see pi-otel %s --help", name, msg, name)
}

// dashes shows a flag the way help does, with two dashes.
func dashes(f string) string {
	if strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") {
		return "-" + f
	}
	return f
}

var badValue = regexp.MustCompile(`^invalid (?:boolean )?value ("[^"]*") for (?:flag )?(-\S+): (.*)$`)
