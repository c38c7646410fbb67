// Command streamgen writes a synthetic Pi stream for benchmarks.
//
//	streamgen -size 1GB > stream.jsonl          realistic mix, whole prompts
//	streamgen -paced 5000 -interval 1ms          stamped deltas at a steady pace
//	streamgen -measure < out.jsonl               per-record latency of stamped records
//
// Sizes take a KB, MB or GB suffix (powers of ten) or KiB, MiB, GiB.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("streamgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "100MB", "write whole prompts until at least this much is out")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same stream")
	bigEvery := fs.Int("big-every", 200, "about one tool run in this many prints a big output (0: never)")
	bigMin := fs.String("big-min", "1MB", "smallest big tool output")
	bigMax := fs.String("big-max", "8MB", "largest big tool output")
	retries := fs.Int("retry-every", 60, "about one prompt in this many is retried after an overload (0: never)")
	compactions := fs.Int("compact-every", 40, "about one prompt in this many ends with a compaction (0: never)")
	stats := fs.Bool("stats", false, "print the record mix to stderr")
	paced := fs.Int("paced", 0, "write one prompt with this many stamped text deltas, paced by -interval")
	interval := fs.Duration("interval", time.Millisecond, "with -paced, time between deltas")
	measure := fs.Bool("measure", false, "read stamped records from stdin and print their latency")
	skip := fs.Int("skip", 100, "with -measure, leave out the first stamped records (start-up)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sizes := map[string]int64{}
	for name, v := range map[string]string{"size": *size, "big-min": *bigMin, "big-max": *bigMax} {
		n, err := parseSize(v)
		if err != nil {
			fmt.Fprintf(stderr, "streamgen: -%s: %v\n", name, err)
			return 2
		}
		sizes[name] = n
	}
	opts := []streamgen.Option{
		streamgen.WithSeed(*seed),
		streamgen.WithBigOutputs(*bigEvery, int(sizes["big-min"]), int(sizes["big-max"])),
		streamgen.WithRetries(*retries),
		streamgen.WithCompactions(*compactions),
	}
	switch {
	case *measure:
		lat, err := streamgen.MeasureLatency(stdin, *skip)
		if err != nil {
			fmt.Fprintf(stderr, "streamgen: %v\n", err)
			return 1
		}
		us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }
		fmt.Fprintf(stdout, "records=%d p50_us=%s p90_us=%s p99_us=%s max_us=%s\n",
			lat.Count, us(lat.P50), us(lat.P90), us(lat.P99), us(lat.Max))
		return 0
	case *paced > 0:
		if err := streamgen.WritePaced(stdout, *paced, *interval, opts...); err != nil {
			fmt.Fprintf(stderr, "streamgen: %v\n", err)
			return 1
		}
		return 0
	}
	st, err := streamgen.Write(stdout, sizes["size"], opts...)
	if err != nil {
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
		return 1
	}
	if *stats {
		printStats(stderr, st)
	}
	return 0
}

func printStats(w io.Writer, st streamgen.Stats) {
	fmt.Fprintf(w, "%d bytes, %d records, %d prompts, largest record %d bytes\n", st.Bytes, st.Records, st.Prompts, st.LargestRecord)
	kinds := make([]string, 0, len(st.Types))
	for k := range st.Types {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return st.Types[kinds[i]].Bytes > st.Types[kinds[j]].Bytes })
	fmt.Fprintf(w, "%-32s %10s %7s %12s %7s %10s\n", "type", "records", "rec%", "bytes", "bytes%", "avg")
	for _, k := range kinds {
		t := st.Types[k]
		fmt.Fprintf(w, "%-32s %10d %6.2f%% %12d %6.2f%% %10d\n", k, t.Records,
			100*float64(t.Records)/float64(st.Records), t.Bytes, 100*float64(t.Bytes)/float64(st.Bytes), t.Bytes/t.Records)
	}
}

// parseSize reads 100MB, 1GB, 512KiB or a plain byte count.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1}}
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(num), strings.ToUpper(u.suffix)) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(f * float64(mult)), nil
}
