#!/usr/bin/env bash
# Measures pi-otel watch over many session files: the first scan, resident
# memory, open file descriptors, inotify watches, and CPU while idle; then
# the cost of tracing all of it (--since all) and of new activity. It prints
# numbers; it asserts nothing. See docs/performance.md.
#
#   scripts/bench-watch.sh                 10,000 files
#   FILES=1000 scripts/bench-watch.sh      fewer, for iterating
#
# Environment:
#   FILES      session files (default 10000), in folders of PER_DIR
#   PER_DIR    files per project folder (default 100)
#   IDLE       seconds of idle to measure CPU over (default 60)
#   BENCH_DIR  where the binary and files go (default $TMPDIR/pi-otel-bench)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

FILES="${FILES:-10000}"
PER_DIR="${PER_DIR:-100}"
IDLE="${IDLE:-60}"
SRC="$ROOT/testdata/sessions/pi-1.6.0/two-prompts.jsonl" # a real Pi 1.6.0 session, two runs
TICK=$(getconf CLK_TCK)

build ./cmd/pi-otel
PIOTEL="$DIR/pi-otel"

SESS="$DIR/watch-$FILES"
if [[ ! -f $SESS/.done ]]; then
	log "bench-watch: writing $FILES session files under $SESS"
	rm -rf "$SESS"
	for ((i = 0; i < FILES; i++)); do
		d="$SESS/--home-u-proj$((i / PER_DIR))--"
		[[ -d $d ]] || mkdir -p "$d"
		cp "$SRC" "$d/2026-01-01T00-00-00-000Z_$i.jsonl"
	done
	touch -d '2 days ago' "$SESS"/*/*.jsonl
	touch "$SESS/.done"
fi
BYTES=$(du -sb "$SESS" | cut -f1)

# cpu_ticks PID: utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
inotify_watches() {
	local n=0 f
	for f in /proc/"$1"/fdinfo/*; do
		n=$((n + $(grep -c '^inotify' "$f" || true)))
	done
	echo "$n"
}
now() { date +%s.%N; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# wait_quiet PID: waits until the process has used no CPU for a second,
# and sets T1 to when it last did.
wait_quiet() {
	local last cur
	last=$(cpu_ticks "$1")
	while sleep 1; do
		cur=$(cpu_ticks "$1")
		[[ $cur != "$last" ]] || break
		last=$cur
		T1=$(now)
	done
}

# watch_until STATE ARGS...: starts pi-otel watch and waits for the state
# file, which is written once the first scan (and --since work) is done.
start_watch() {
	local state=$1
	shift
	rm -f "$state"
	"$PIOTEL" watch --quiet --traces-exporter none --state "$state" "$@" "$SESS" &
	WPID=$!
	T0=$(now)
	while [[ ! -s $state ]]; do sleep 0.02; done
	T1=$(now)
	wait_quiet $WPID
}

echo "pi-otel watch over $FILES session files in $((FILES / PER_DIR)) folders, $((BYTES / 1000000)) MB ($SESS)"
echo

# 1. First start, history skipped: the scan, then idle.
start_watch "$DIR/watch-state.json"
echo "First start (history not traced):"
awk -v a="$T0" -v b="$T1" 'BEGIN { printf "  %-36s %.2f s\n", "first scan:", b - a }'
printf "  %-36s %s\n" "open file descriptors:" "$(fds $WPID)"
printf "  %-36s %s\n" "inotify watches:" "$(inotify_watches $WPID)"
printf "  %-36s %s MB (peak %s MB)\n" "RSS:" "$(mb "$(rss_kb $WPID)")" "$(mb "$(hwm_kb $WPID)")"
c0=$(cpu_ticks $WPID)
sleep "$IDLE"
c1=$(cpu_ticks $WPID)
awk -v t=$((c1 - c0)) -v hz="$TICK" -v s="$IDLE" 'BEGIN { printf "  %-36s %.3f s in %d s (%.3f%% of a core)\n", "CPU while idle:", t / hz, s, 100 * t / hz / s }'

# 2. New activity: a run appended to 100 files while it watches.
ACTIVE=$((FILES < 100 ? FILES : 100))
c0=$(cpu_ticks $WPID)
t0=$(now)
n=0
for f in "$SESS"/*/*.jsonl; do
	sed -n '5,$p' "$SRC" >>"$f" # the runs again, as new entries
	n=$((n + 1))
	[[ $n -lt $ACTIVE ]] || break
done
wait_quiet $WPID
c1=$(cpu_ticks $WPID)
echo
echo "New activity ($ACTIVE files appended to at once):"
awk -v t=$((c1 - c0)) -v hz="$TICK" 'BEGIN { printf "  %-36s %.3f s\n", "CPU to read and trace:", t / hz }'
printf "  %-36s %s MB (peak %s MB)\n" "RSS after:" "$(mb "$(rss_kb $WPID)")" "$(mb "$(hwm_kb $WPID)")"
printf "  %-36s %s\n" "open file descriptors:" "$(fds $WPID)"
kill -TERM $WPID
wait $WPID || true

# Undo the appends so the next run starts from the same files.
rm -f "$SESS/.done"

# 3. --since all: every run of every file traced.
start_watch "$DIR/watch-state-all.json" --since all
# Done when the state commits a run in every file (the first scan commits
# in batches, and may wait on the disk between them).
while [[ $(grep -o '"committed":[1-9]' "$DIR/watch-state-all.json" | wc -l) -lt $FILES ]]; do sleep 0.05; done
T1=$(now)
wait_quiet $WPID
echo
echo "--since all (every run of every file traced, exporter none):"
awk -v a="$T0" -v b="$T1" -v by="$BYTES" 'BEGIN { printf "  %-36s %.2f s, %.1f MB/s\n", "first start:", b - a, by / 1e6 / (b - a) }'
printf "  %-36s %s MB (peak %s MB)\n" "RSS after:" "$(mb "$(rss_kb $WPID)")" "$(mb "$(hwm_kb $WPID)")"
printf "  %-36s %s\n" "open file descriptors:" "$(fds $WPID)"
kill -TERM $WPID
wait $WPID || true
