#!/usr/bin/env bash
# Measures how fast pi-otel reads Pi's event stream, side by side with a
# plain pipe copy and with jq, on one generated stream (internal/testutil/streamgen):
# throughput (MB/s, records/s), the ratio to `cat | cat` and to `jq`, peak
# RSS, and the latency `pi-otel run` adds to each record. It prints numbers;
# it asserts nothing. See docs/performance.md for what the numbers mean.
#
#   scripts/bench.sh                 1 GB stream
#   SIZE=200MB scripts/bench.sh      smaller, for iterating
#
# Environment:
#   SIZE             stream size (default 1GB; KB/MB/GB are powers of ten)
#   RUNS             runs per command, the fastest is reported (default 3)
#   BENCH_DIR        where the binaries and streams go (default $TMPDIR/pi-otel-bench);
#                    streams are kept there and reused by size
#   LATENCY_RECORDS  stamped records for the latency test (default 5000, of which the
#                    first 100 are left out as start-up; 0 skips the test)
#   LATENCY_INTERVAL time between them (default 1ms)
#   BIG_RECORD       tool output size for the large-record memory test (default 40MB; 0 skips it)
#   SESSION_SIZE     size of the generated session history traced by `pi-otel replay`
#                    (default $SIZE; 0 skips it)
#   WATCH_FILES      session files for the pi-otel watch measurement (default 10000; 0
#                    skips it; see scripts/bench-watch.sh)
#   BASELINE         another pi-otel binary to measure alongside, e.g. one built
#                    from an earlier commit (git archive REV | tar -x -C DIR; go build)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

SIZE="${SIZE:-1GB}"
RUNS="${RUNS:-3}"
LATENCY_RECORDS="${LATENCY_RECORDS:-5000}"
LATENCY_INTERVAL="${LATENCY_INTERVAL:-1ms}"
BIG_RECORD="${BIG_RECORD:-40MB}"

command -v jq >/dev/null || { log "bench: jq is needed (apt-get install -y jq)"; exit 1; }
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
	log "bench: $TIME not found (apt-get install -y time): peak RSS will read n/a"
	TIME=""
fi

build ./cmd/pi-otel ./internal/testutil/streamgen/cmd/streamgen
PIOTEL="$DIR/pi-otel"
GEN="$DIR/streamgen"

# generate FILE CMD... runs the generator CMD -stats once into FILE (its
# stats into FILE.stats) and reuses both afterwards.
generate() {
	local file="$1"
	shift
	if [[ ! -s $file || ! -s $file.stats ]]; then
		log "bench: generating $file"
		"$@" -stats >"$file.tmp" 2>"$file.stats"
		mv "$file.tmp" "$file"
	fi
}

# stream NAME ARGS... generates a stream once and prints its path.
stream() {
	local file="$DIR/$1.jsonl"
	shift
	generate "$file" "$GEN" "$@"
	printf '%s\n' "$file"
}

STREAM="$(stream "stream-$SIZE" -size "$SIZE")"
BYTES=$(stat -c %s "$STREAM")
RECORDS=$(wc -l <"$STREAM")
LARGEST=$(sed -n 's/.*largest record \([0-9]*\) bytes.*/\1/p' "$STREAM.stats")
cat "$STREAM" >/dev/null # into the page cache, so no run pays for the disk

# measure NAME COMMAND runs COMMAND (a bash string) RUNS times and sets
# SECS to the fastest wall time, CPU to the CPU seconds (user+system, all
# processes of the command) of that run, and RSS_KB to the largest peak RSS
# of any single process.
measure() {
	local name="$1" cmd="$2" best="" cpu="" rss=0 t0 t1 secs out m u s
	out="$(mktemp)"
	for _ in $(seq "$RUNS"); do
		t0=$(date +%s%N)
		if [[ -n $TIME ]]; then
			$TIME -f '%M %U %S' -o "$out" bash -c "$cmd"
		else
			bash -c "$cmd"
		fi
		t1=$(date +%s%N)
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
		m=0 u=0 s=0
		[[ -n $TIME ]] && read -r m u s < <(tail -n1 "$out")
		if [[ -z $best ]] || awk -v x="$secs" -v y="$best" 'BEGIN { exit !(x < y) }'; then
			best=$secs
			cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
		fi
		((m > rss)) && rss=$m
	done
	rm -f "$out"
	SECS=$best
	CPU=$cpu
	RSS_KB=$rss
	log "bench: $name: ${SECS}s"
}

row() { # row NAME SECS CPU RSS_KB REF_CAT REF_JQ
	awk -v n="$1" -v s="$2" -v cpu="$3" -v r="$4" -v c="$5" -v j="$6" -v bytes="$BYTES" -v recs="$RECORDS" 'BEGIN {
		rss = (r > 0) ? sprintf("%.1f", r / 1024) : "n/a"
		cs = (r > 0) ? sprintf("%.2f", cpu) : "n/a"
		printf "%-52s %8.3f %9.1f %12.0f %8.2fx %7.2fx %7s %8s\n", n, s, bytes / 1e6 / s, recs / s, c / s, j / s, cs, rss
	}'
}

log "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); best of $RUNS runs each"
declare -A SECS_OF CPU_OF RSS_OF
run_case() {
	measure "$1" "$2"
	SECS_OF[$1]=$SECS
	CPU_OF[$1]=$CPU
	RSS_OF[$1]=$RSS_KB
}
CASES=(
	"cat (pipe copy)|cat '$STREAM' | cat >/dev/null"
	"jq -c .type|jq -c .type <'$STREAM' >/dev/null"
	"pi-otel replay --traces-exporter none|'$PIOTEL' replay --quiet --traces-exporter none '$STREAM'"
	"pi-otel replay --traces-exporter file (/dev/null)|'$PIOTEL' replay --quiet --traces-exporter file --traces-file /dev/null '$STREAM'"
	"pi-otel run -- cat (passthrough, traces none)|'$PIOTEL' run --quiet --traces-exporter none -- cat '$STREAM' >/dev/null"
)
if [[ -n ${BASELINE:-} ]]; then
	CASES+=(
		"baseline replay --traces-exporter none|'$BASELINE' replay --quiet --traces-exporter none '$STREAM'"
		"baseline run -- cat (passthrough, traces none)|'$BASELINE' run --quiet --traces-exporter none -- cat '$STREAM' >/dev/null"
	)
fi
for c in "${CASES[@]}"; do
	run_case "${c%%|*}" "${c#*|}"
done

CAT=${SECS_OF["cat (pipe copy)"]}
JQ=${SECS_OF["jq -c .type"]}
echo
echo "Throughput: $(awk -v b="$BYTES" 'BEGIN { printf "%.0f MB", b / 1e6 }'), $RECORDS records, largest record $LARGEST bytes ($STREAM)"
printf "%-52s %8s %9s %12s %9s %8s %7s %8s\n" "command" "seconds" "MB/s" "records/s" "vs cat" "vs jq" "CPU s" "RSS MB"
for c in "${CASES[@]}"; do
	name="${c%%|*}"
	row "$name" "${SECS_OF[$name]}" "${CPU_OF[$name]}" "${RSS_OF[$name]}" "$CAT" "$JQ"
done
echo "(seconds: the fastest of $RUNS runs, wall clock; CPU s: user+system of that run, all its processes;"
echo " vs cat, vs jq: throughput relative to theirs; RSS: the largest peak of any one process)"

if [[ $LATENCY_RECORDS != 0 ]]; then
	skip=$((LATENCY_RECORDS / 10 < 100 ? LATENCY_RECORDS / 10 : 100)) # start-up
	log "bench: latency, $LATENCY_RECORDS records every $LATENCY_INTERVAL"
	direct=$("$GEN" -paced "$LATENCY_RECORDS" -interval "$LATENCY_INTERVAL" | "$GEN" -measure -skip "$skip")
	through=$("$PIOTEL" run --quiet --traces-exporter none -- "$GEN" -paced "$LATENCY_RECORDS" -interval "$LATENCY_INTERVAL" | "$GEN" -measure -skip "$skip")
	echo
	echo "Latency per record, writer to reader ($LATENCY_RECORDS records, one every $LATENCY_INTERVAL, the first $skip left out):"
	printf "  %-28s %s\n" "pipe only:" "$direct" "through pi-otel run:" "$through"
	awk -v d="$direct" -v t="$through" 'BEGIN {
		split(d, a, /[ =]/); split(t, b, /[ =]/)
		for (i = 1; i in a; i += 2) { da[a[i]] = a[i + 1]; tb[b[i]] = b[i + 1] }
		printf "  %-28s p50 %+.1f us, p99 %+.1f us\n", "added by pi-otel:", tb["p50_us"] - da["p50_us"], tb["p99_us"] - da["p99_us"]
	}'
fi

if [[ $BIG_RECORD != 0 ]]; then
	BIG="$(stream "big-$BIG_RECORD" -size 200MB -big-every 3 -big-min "$BIG_RECORD" -big-max "$BIG_RECORD")"
	BIG_LARGEST=$(sed -n 's/.*largest record \([0-9]*\) bytes.*/\1/p' "$BIG.stats")
	cat "$BIG" >/dev/null
	echo
	echo "Large records: tool outputs of $BIG_RECORD, largest record $BIG_LARGEST bytes ($BIG)"
	printf "%-52s %8s %9s %12s\n" "command" "seconds" "RSS MB" "RSS/record"
	for c in "pi-otel replay --traces-exporter none|'$PIOTEL' replay --quiet --traces-exporter none '$BIG'" \
		"pi-otel run -- cat (passthrough)|'$PIOTEL' run --quiet --traces-exporter none -- cat '$BIG' >/dev/null"; do
		measure "${c%%|*} (large records)" "${c#*|}"
		awk -v n="${c%%|*}" -v s="$SECS" -v r="$RSS_KB" -v l="$BIG_LARGEST" 'BEGIN {
			if (r > 0) printf "%-52s %8.3f %9.1f %11.2fx\n", n, s, r / 1024, r * 1024 / l
			else printf "%-52s %8.3f %9s %12s\n", n, s, "n/a", "n/a"
		}'
	done
fi

SESSION_SIZE="${SESSION_SIZE:-$SIZE}"
if [[ $SESSION_SIZE != 0 ]]; then
	# Months of Pi session history in one file (internal/session/sessiongen),
	# traced from Pi's session format rather than its event stream.
	build ./internal/session/sessiongen/cmd/sessiongen
	HIST="$DIR/history-$SESSION_SIZE.jsonl"
	generate "$HIST" "$DIR/sessiongen" -size "$SESSION_SIZE"
	cat "$HIST" >/dev/null
	HBYTES=$(stat -c %s "$HIST")
	HLINES=$(wc -l <"$HIST")
	echo
	echo "Session history: $(cat "$HIST.stats") ($HIST)"
	printf "%-52s %8s %9s %12s %7s %8s\n" "command" "seconds" "MB/s" "entries/s" "CPU s" "RSS MB"
	for c in "cat (pipe copy)|cat '$HIST' | cat >/dev/null" \
		"jq -c .type|jq -c .type <'$HIST' >/dev/null" \
		"pi-otel replay --traces-exporter none|'$PIOTEL' replay --quiet --traces-exporter none '$HIST'" \
		"pi-otel replay --traces-exporter file (/dev/null)|'$PIOTEL' replay --quiet --traces-exporter file --traces-file /dev/null '$HIST'"; do
		measure "${c%%|*} (session)" "${c#*|}"
		awk -v n="${c%%|*}" -v s="$SECS" -v cpu="$CPU" -v r="$RSS_KB" -v b="$HBYTES" -v l="$HLINES" 'BEGIN {
			rss = (r > 0) ? sprintf("%.1f", r / 1024) : "n/a"
			printf "%-52s %8.3f %9.1f %12.0f %7s %8s\n", n, s, b / 1e6 / s, l / s, cpu, rss
		}'
	done
fi

# pi-otel watch over many session files (WATCH_FILES, default 10000; 0 skips it).
if [[ ${WATCH_FILES:-10000} != 0 ]]; then
	echo
	FILES="${WATCH_FILES:-10000}" BENCH_DIR="$DIR" "$ROOT/scripts/bench-watch.sh"
fi
