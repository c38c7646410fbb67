#!/usr/bin/env bash
# Measures a pi-otel watch --since all backfill of a generated history
# (internal/session/sessiongen files, each its own session) into the file
# exporter, or into a Collector at ENDPOINT: throughput (MB/s and runs/s,
# by the wall clock and per CPU second, since a shared machine slows the
# wall clock) and peak RSS. It prints numbers; it asserts nothing. See
# docs/performance.md.
#
#   scripts/bench-backfill.sh                      100 MB in 2,000 files
#   SIZE=1000 FILES=5000 scripts/bench-backfill.sh 1 GB
#   ENDPOINT=http://127.0.0.1:4317 scripts/bench-backfill.sh
#
# Environment:
#   SIZE       MB of history (default 100)
#   FILES      session files (default 2000), in folders of 50
#   ENDPOINT   an OTLP gRPC collector; default: the file exporter
#   BENCH_DIR  where the binaries, files and output go
#   PI_OTEL    the pi-otel binary to measure (default: built from this tree),
#              for a baseline: git archive REV | tar -x -C D && go build
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

SIZE="${SIZE:-100}"
FILES="${FILES:-2000}"
ENDPOINT="${ENDPOINT:-}"
TICK=$(getconf CLK_TCK)

if [[ -n ${PI_OTEL:-} ]]; then
	build ./internal/session/sessiongen/cmd/sessiongen
else
	build ./cmd/pi-otel ./internal/session/sessiongen/cmd/sessiongen
	PI_OTEL="$DIR/pi-otel"
fi
HIST="$DIR/history-${SIZE}MB-$FILES"
if [[ ! -f $HIST/.done ]]; then
	log "bench-backfill: writing $SIZE MB in $FILES session files under $HIST"
	rm -rf "$HIST"
	per=$((SIZE * 1000000 / FILES))
	for ((i = 0; i < FILES; i++)); do
		d="$HIST/--home-u-proj$((i / 50))--"
		[[ -d $d ]] || mkdir -p "$d"
		# Sizes spread over two orders of magnitude around the mean.
		s=$((per * (1 + (i % 7) * (i % 7)) / 20))
		"$DIR/sessiongen" -size "$s" -seed "$i" -id "bench-$i" >"$d/2026-01-01T00-00-00-000Z_$i.jsonl"
	done
	touch -d '2 days ago' "$HIST"/*/*.jsonl
	touch "$HIST/.done"
fi
BYTES=$(find "$HIST" -name '*.jsonl' -printf '%s\n' | awk '{ s += $1 } END { print s }')

STATE="$DIR/backfill-state.json"
OUT="$DIR/backfill-traces.jsonl"
rm -f "$STATE" "$OUT"
if [[ -n $ENDPOINT ]]; then
	exp=(--endpoint "$ENDPOINT" --metrics-exporter none)
	dest="collector $ENDPOINT"
else
	exp=(--traces-exporter file --traces-file "$OUT" --metrics-exporter none)
	dest="file exporter"
fi
PI_OTEL_SPOOL_DIR=none "$PI_OTEL" watch --quiet --since all --state "$STATE" "${exp[@]}" "$HIST" &
WPID=$!
T0=$(date +%s.%N)
HWM=0
# Done when the state no longer holds the first scan ("scan").
while :; do
	h=$(awk '/^VmHWM/ { print $2 }' "/proc/$WPID/status" 2>/dev/null || echo 0)
	((h > HWM)) && HWM=$h
	if [[ -s $STATE ]] && ! grep -q '"scan"' "$STATE"; then break; fi
	sleep 0.05
done
T1=$(date +%s.%N)
CPU=$(awk '{ print $14 + $15 }' "/proc/$WPID/stat")
h=$(awk '/^VmHWM/ { print $2 }' "/proc/$WPID/status")
((h > HWM)) && HWM=$h
kill -TERM $WPID
wait $WPID || true
RUNS=$(cat "$HIST"/*/*.jsonl | grep -c '"role":"user"' || true)

echo "$PI_OTEL watch --since all: $((BYTES / 1000000)) MB in $FILES files, $RUNS runs, into the $dest"
awk -v a="$T0" -v b="$T1" -v by="$BYTES" -v r="$RUNS" -v c="$CPU" -v hz="$TICK" -v hwm="$HWM" 'BEGIN {
	w = b - a; cpu = c / hz
	printf "  %-28s %.1f s, %.0f MB/s, %.0f runs/s\n", "wall clock:", w, by / 1e6 / w, r / w
	printf "  %-28s %.1f s, %.0f MB/s, %.0f runs/s\n", "CPU (user + system):", cpu, by / 1e6 / cpu, r / cpu
	printf "  %-28s %.1f MB\n", "peak RSS:", hwm / 1024
}'
