#!/usr/bin/env bash
# Measures the peak RSS of pi-otel replay and pi-otel watch --since all on
# session files whose messages are single huge lines: a tool result, a
# prompt, an answer (text, thinking, tool call arguments), an image, and a
# prompt followed by an answer. It prints numbers; it asserts nothing. See
# docs/performance.md ("pi-otel watch and long lines").
#
#   scripts/bench-longlines.sh                  200 MB lines
#   SIZE=40 scripts/bench-longlines.sh          40 MB lines
#   PI_OTEL=/tmp/pi-otel-old scripts/bench-longlines.sh    a baseline build
#
# Environment:
#   SIZE       MB of text in each huge message (default 200)
#   KINDS      which files (default: tool prompt answer thinking args image pair)
#   FLAGS      extra flags for both commands, e.g. --capture-content
#   PI_OTEL    the binary to measure (default: built from this tree)
#   BENCH_DIR  where the binary and files go (default $TMPDIR/pi-otel-bench)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

SIZE="${SIZE:-200}"
KINDS="${KINDS:-tool prompt answer thinking args image pair}"
read -r -a EXTRA <<<"${FLAGS:-}"
if [[ -z ${PI_OTEL:-} ]]; then
	build ./cmd/pi-otel
	PI_OTEL="$DIR/pi-otel"
fi
command -v /usr/bin/time >/dev/null || {
	log "bench-longlines: needs GNU time (apt-get install time)"
	exit 1
}

# Text of about $1 MB as a JSON string body: lines of prose with escapes
# and characters outside ASCII, which a character count must decode.
UNIT='The quick brown fox jumps over the lazy dog, \"again\", \u00e9 \ud83d\ude00.\n'
# (yes ends on SIGPIPE when head has enough: not a failure.)
text() { { yes "$UNIT" || true; } | head -n $(($1 * 1000000 / ${#UNIT})) | tr -d '\n'; }
b64() { { yes QUJD || true; } | head -n $(($1 * 250000)) | tr -d '\n'; }

N=0
PREV=null
TS=1735689600000
# entry TYPE FIELDS: one entry line after the previous one.
entry() {
	N=$((N + 1))
	TS=$((TS + 1000))
	local id
	id=$(printf 'e%07d' $N)
	printf '{"type":"%s","id":"%s","parentId":%s,"timestamp":"%s",%s}\n' "$1" "$id" "$PREV" \
		"$(date -u -d "@$((TS / 1000))" +%Y-%m-%dT%H:%M:%S.000Z)" "$2"
	PREV="\"$id\""
}
# message ROLE FIELDS CONTENT: a message entry whose content the function
# CONTENT writes, streamed: the shell never holds it.
message() {
	N=$((N + 1))
	TS=$((TS + 1000))
	local id
	id=$(printf 'e%07d' $N)
	printf '{"type":"message","id":"%s","parentId":%s,"timestamp":"%s","message":{"role":"%s",%s"content":' "$id" "$PREV" \
		"$(date -u -d "@$((TS / 1000))" +%Y-%m-%dT%H:%M:%S.000Z)" "$1" "$2"
	"$3"
	printf ',"timestamp":%s}}\n' "$TS"
	PREV="\"$id\""
}
ASST='"api":"anthropic-messages","provider":"anthropic","model":"claude-x","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":30,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},'
# The contents.
small_text() { printf '[{"type":"text","text":"ok"}]'; }
big_text() { printf '[{"type":"text","text":"'; text "$SIZE"; printf '"}]'; }
big_thinking() { printf '[{"type":"thinking","thinking":"'; text "$SIZE"; printf '"},{"type":"text","text":"ok"}]'; }
small_call() { printf '[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"cat big"}}]'; }
big_call() { printf '[{"type":"toolCall","id":"c1","name":"write","arguments":{"path":"a.txt","content":"'; text "$SIZE"; printf '"}}]'; }
big_image() { printf '[{"type":"text","text":"look"},{"type":"image","mimeType":"image/png","data":"'; b64 "$SIZE"; printf '"}]'; }
hello() { message user '' small_text; }
answer() { message assistant "$ASST\"stopReason\":\"stop\"," small_text; }

# session KIND: a session file, as Pi writes one, with KIND's huge line.
session() {
	N=0 PREV=null TS=1735689600000
	printf '{"type":"session","version":3,"id":"0193a1b2-0000-7000-8000-00000000%04d","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/home/u/proj"}\n' "$SIZE"
	entry model_change '"provider":"anthropic","modelId":"claude-x"'
	entry thinking_level_change '"thinkingLevel":"off"'
	case $1 in
	tool)
		hello
		message assistant "$ASST\"stopReason\":\"toolUse\"," small_call
		message toolResult '"toolCallId":"c1","toolName":"bash","isError":false,' big_text
		answer
		;;
	prompt)
		message user '' big_text
		answer
		;;
	answer)
		hello
		message assistant "$ASST\"stopReason\":\"stop\"," big_text
		;;
	thinking)
		hello
		message assistant "$ASST\"stopReason\":\"stop\"," big_thinking
		;;
	args)
		hello
		message assistant "$ASST\"stopReason\":\"toolUse\"," big_call
		message toolResult '"toolCallId":"c1","toolName":"write","isError":false,' small_text
		answer
		;;
	image)
		message user '' big_image
		answer
		;;
	pair)
		message user '' big_text
		message assistant "$ASST\"stopReason\":\"stop\"," big_text
		;;
	esac
}

hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

echo "Peak RSS (MB) on one session file per kind, ${SIZE} MB of text in its huge message${FLAGS:+, $FLAGS}"
printf '%-10s %10s %10s %10s\n' kind "file MB" replay watch
for kind in $KINDS; do
	d="$DIR/longlines-$SIZE/$kind"
	f="$d/2025-01-01T00-00-00-000Z_$kind.jsonl"
	if [[ ! -s $f ]]; then
		mkdir -p "$d"
		session "$kind" >"$f.tmp"
		mv "$f.tmp" "$f"
	fi
	size=$(stat -c %s "$f")

	/usr/bin/time -f %M -o "$DIR/longlines.time" "$PI_OTEL" replay --quiet --traces-exporter none "${EXTRA[@]}" "$f" >/dev/null
	replay=$(mb "$(tail -1 "$DIR/longlines.time")")

	# watch: traced once the state commits the whole file, then stopped.
	state="$DIR/longlines-state.json"
	rm -f "$state"
	"$PI_OTEL" watch --quiet --since all --traces-exporter none --state "$state" "${EXTRA[@]}" "$d" &
	wpid=$!
	until grep -q "\"committed\":$size" "$state" 2>/dev/null; do sleep 0.2; done
	watch=$(mb "$(hwm_kb $wpid)")
	kill -TERM $wpid
	wait $wpid || true

	printf '%-10s %10.0f %10s %10s\n' "$kind" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" "$replay" "$watch"
done
