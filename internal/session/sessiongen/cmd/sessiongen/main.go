// Command sessiongen writes a long synthetic Pi session file to stdout, for
// scripts/bench.sh: sessiongen -size 1GB > history.jsonl
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
)

func main() {
	size := flag.String("size", "100MB", "bytes to write (KB, MB, GB are powers of ten)")
	seed := flag.Uint64("seed", 1, "seed for sizes and choices")
	stats := flag.Bool("stats", false, "print what was written to stderr")
	subagents := flag.Bool("subagents", false, "make every tool call a subagent call carrying two children's runs")
	id := flag.String("id", "", "session id of the header (default: a fixed one)")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessiongen:", err)
		os.Exit(2)
	}
	st, err := sessiongen.Write(os.Stdout, sessiongen.Config{Size: n, Seed: *seed, Subagents: *subagents, ID: *id})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sessiongen:", err)
		os.Exit(1)
	}
	if *stats {
		fmt.Fprintf(os.Stderr, "%d bytes, %d lines, %d runs, %d tool calls, %d compactions, %d retries\n",
			st.Bytes, st.Lines, st.Runs, st.ToolCalls, st.Compactions, st.Retries)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"KB": 1e3, "MB": 1e6, "GB": 1e9} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
