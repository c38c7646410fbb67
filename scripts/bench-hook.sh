#!/usr/bin/env bash
# Measures what pi-otel's bash hook adds to one bash call, end to end, in
# milliseconds: the median and the 99th percentile of N calls of
# `bash -c COMMAND`, each timed by the calling bash ($EPOCHREALTIME, no
# fork), without pi-otel and with it, in turns. It prints numbers; it asserts
# nothing. See docs/configuration.md, Propagation.
#
#   tool-call   a stand-in for Pi under pi-otel run: it writes a json
#               stream naming a bash call, then runs the call
#   no-call     a child of pi-otel run that runs bash -c true (an
#               extension's bash, a ! command, a git hook)
#   unfollowed  the setup line of docs/watch.md, pi-otel watch running, a
#               session file outside watch's folders
#   no-session  the same, under pi --no-session (no PI_SESSION_FILE)
#
#   scripts/bench-hook.sh          500 calls per case
#   N=2000 scripts/bench-hook.sh
#
# Environment:
#   N          calls per case (default 500)
#   BENCH_DIR  where the binary and output go
#   PI_OTEL    the pi-otel binary to measure (default: built from this tree)
set -euo pipefail
# shellcheck source=scripts/bench-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench-lib.sh"

N="${N:-500}"
if [[ -z ${PI_OTEL:-} ]]; then
	build ./cmd/pi-otel
	PI_OTEL="$DIR/pi-otel"
fi
W="$DIR/hook"
rm -rf "$W"
mkdir -p "$W/ctx" "$W/state" "$W/sessions"
chmod 700 "$W/ctx"
quiet=(--quiet --traces-exporter none --metrics-exporter none --logs-exporter none)

# loop MODE OUT: N calls, each run without the hook and with it, in
# turns, so that a machine's load weighs on both alike; MODE call writes
# the call's records to stdout first. The loop's own bash is pi-otel's
# child (run) or carries the setup line's environment (watch).
loop() {
	cat <<EOF
out=$2
printf '%s\n' '{"type":"session","version":3,"id":"bench","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}' '{"type":"agent_start"}' '{"type":"turn_start"}'
for ((i = 0; i < $N; i++)); do
	c="true # \$i"
	t0=\$EPOCHREALTIME
	(unset BASH_ENV PI_OTEL_HOOK PI_SESSION_ID PI_SESSION_FILE; exec bash -c "\$c")
	t1=\$EPOCHREALTIME
	if [[ $1 == call ]]; then
		printf '%s\n' '{"type":"message_end","message":{"role":"assistant","stopReason":"toolUse","content":[{"type":"toolCall","id":"c'\$i'","name":"bash","arguments":{"command":"'"\$c"'"}}]}}' '{"type":"tool_execution_start","toolCallId":"c'\$i'","toolName":"bash","args":{"command":"'"\$c"'"}}'
	fi
	t2=\$EPOCHREALTIME
	(exec bash -c "\${PREFIX-}\$c")
	t3=\$EPOCHREALTIME
	echo "\$t0 \$t1 \$t2 \$t3" >>"\$out"
	if [[ $1 == call ]]; then
		printf '%s\n' '{"type":"tool_execution_end","toolCallId":"c'\$i'","toolName":"bash","result":{"content":[]},"isError":false}'
	fi
done
printf '%s\n' '{"type":"turn_end"}' '{"type":"agent_end","messages":[]}'
EOF
}

# report NAME FILE: plain and hooked medians and 99th percentiles, and the
# same of what the hook added to each pair, in ms.
report() {
	local col f v=()
	for col in 1 2 3; do
		for f in 0.5 0.99; do
			v+=("$(awk '{ p = ($2 - $1) * 1000; h = ($4 - $3) * 1000; print (c == 1 ? p : c == 2 ? h : h - p) }' c="$col" "$2" |
				sort -g | awk -v f="$f" '{ v[NR] = $1 } END { i = int(NR * f) + 1; if (i > NR) i = NR; print v[i] }')")
		done
	done
	printf '%-11s plain %6.2f ms (p99 %6.2f)  with pi-otel %6.2f ms (p99 %6.2f)  added %5.2f ms (p99 %6.2f)\n' "$1" "${v[@]}"
}

for mode in call no-call; do
	"$PI_OTEL" run "${quiet[@]}" --propagation-dir "$W/ctx" -- bash -c "$(loop "$mode" "$W/$mode")" >/dev/null
done

# watch, with the setup line before each command.
XDG_STATE_HOME="$W/state" "$PI_OTEL" watch "${quiet[@]}" --propagation-dir "$W/ctx" "$W/sessions" &
WPID=$!
trap 'kill -TERM $WPID 2>/dev/null || :; wait $WPID 2>/dev/null || :' EXIT
until [[ -f $W/ctx/watch.pid ]]; do sleep 0.05; done
export PREFIX=". $W/state/pi-otel/hook.bash 2>/dev/null || :
"
export PI_OTEL_PROPAGATION_DIR="$W/ctx" PI_SESSION_ID=0198a2b4-5555-7000-8000-000000000005
PI_SESSION_FILE=/elsewhere/s.jsonl bash -c "$(loop watch "$W/unfollowed")" >/dev/null
bash -c "$(loop watch "$W/no-session")" >/dev/null

report tool-call "$W/call"
report no-call "$W/no-call"
report unfollowed "$W/unfollowed"
report no-session "$W/no-session"
