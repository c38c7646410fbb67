# pi-otel's BASH_ENV hook: it gives the processes of one bash call the trace
# context (TRACEPARENT, TRACESTATE) of the Pi tool call that started it.
# It prints nothing, forks nothing (but $(umask) where /proc is missing),
# and leaves the shell as it found it: options, $?, $_ and no variable or
# function of its own; see docs/configuration.md, Propagation. Written by
# pi-otel.
#
# The first line hides itself from an exported SHELLOPTS=xtrace: the
# group's trace goes to /dev/null, and xtrace is back on only at the end.
{ __pi_otel_u=$_ __pi_otel_s=$? __pi_otel_x=$-; set +x; } 2>/dev/null
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404)); then
	__pi_otel_hook() {
		local -
		set +euCo pipefail
		local LC_ALL=C IFS=$' \t\n'
		local s=${BASH_EXECUTION_STRING-} wait=${PI_OTEL_HOOK_WAIT_MS:-500}
		local dir base ask ans pid= sid= file=
		[[ -n $s && $wait != *[!0-9]* ]] || return 0
		# Every directory, fifo and file used is checked: ours (-O), not a
		# link, of the right type. A directory that is ours and no link
		# holds only files that we, or root, put there, unless we opened
		# it to others ourselves (pi-otel refuses one that is not 0700).
		if [[ -n ${PI_OTEL_HOOK-} ]]; then
			# Under pi-otel run or rpc: the run's own directory.
			dir=$PI_OTEL_HOOK base=$dir pid=${PI_OTEL_PID-}
			sid=${PI_SESSION_ID-} file=${PI_SESSION_FILE-}
			[[ $sid != *[!A-Za-z0-9_-]* ]] || sid=
			[[ $file != *$'\n'* && ${#file} -lt 3000 ]] || file=
		elif [[ -n ${PI_SESSION_ID-} && -n ${PI_SESSION_FILE-} ]]; then
			# A plain pi, traced by pi-otel watch through the setup line:
			# a directory per session, watch's pid in watch.pid. Without
			# a session file (pi --no-session), watch follows nothing.
			sid=$PI_SESSION_ID file=$PI_SESSION_FILE
			[[ $sid != *[!A-Za-z0-9_-]* && $file != *$'\n'* && ${#file} -lt 3000 ]] || return 0
			# A bash that pi-otel run started with the hook as BASH_ENV
			# has had its call's context from that: it ran before this
			# line, and left no mark but the environment bash started with.
			if [[ -n ${TRACEPARENT-} && -r /proc/$$/environ ]]; then
				local v
				while IFS= read -r -d '' v; do
					[[ $v == PI_OTEL_HOOK=* ]] && return 0
				done </proc/$$/environ
			fi
			base=${PI_OTEL_PROPAGATION_DIR-}
			if [[ -z $base ]]; then
				if [[ -n ${XDG_RUNTIME_DIR-} ]]; then base=$XDG_RUNTIME_DIR/pi-otel; else base=${TMPDIR:-/tmp}; base=${base%/}/pi-otel-$UID; fi
			fi
			[[ -d $base && ! -L $base && -O $base && -f $base/watch.pid && ! -L $base/watch.pid && -O $base/watch.pid ]] || return 0
			IFS= read -r pid <"$base/watch.pid"
			dir=$base/s-$sid
		else
			return 0
		fi
		[[ -d $base && ! -L $base && -O $base && -n $pid && $pid != *[!0-9]* ]] || return 0
		kill -0 "$pid" 2>/dev/null || return 0
		ask=$base/ask ans=$base/a.$$
		local idx line n q cand e tp ts body tok got reason= asked= um= k v claimed=
		local -a cands
		while :; do
			# The entries pending: index lists "LENGTH SEQ" per entry c.SEQ,
			# which holds TRACEPARENT, TRACESTATE and the whole command.
			cands=()
			if [[ -d $dir && ! -L $dir && -O $dir && -f $dir/index && ! -L $dir/index && -O $dir/index ]]; then
				idx=
				IFS= read -r -d '' idx <"$dir/index"
				while [[ -n $idx ]]; do
					if [[ $idx == *$'\n'* ]]; then
						line=${idx%%$'\n'*} idx=${idx#*$'\n'}
					else
						line=$idx idx=
					fi
					n=${line%% *} q=${line#* }
					[[ -n $n && $n != *[!0-9]* && -n $q && $q != *[!0-9]* ]] || continue
					# The whole command, or, after a shellCommandPrefix,
					# what follows one of its newlines.
					((n <= ${#s})) || continue
					((n == ${#s})) || [[ ${s:${#s}-n-1:1} == $'\n' ]] || continue
					cands+=("$n $q")
				done
			fi
			# The longest command that matches first; of identical ones,
			# each hook claims its own (noclobber).
			while ((${#cands[@]} > 0)); do
				k=0
				for v in "${!cands[@]}"; do
					((${cands[v]%% *} > ${cands[k]%% *})) && k=$v
				done
				n=${cands[k]%% *} q=${cands[k]#* }
				cands=("${cands[@]:0:k}" "${cands[@]:k+1}")
				e=$dir/c.$q
				[[ -f $e && ! -L $e && -O $e ]] || continue
				tp= ts= body=
				{ IFS= read -r tp && IFS= read -r ts && IFS= read -r -d '' body; } <"$e"
				cand=${s:${#s}-n}
				[ "$body" = "$cand" ] || continue
				if [[ -z $um ]]; then
					# The umask, read without a fork, to be restored.
					if [[ -r /proc/$$/status ]]; then
						while IFS=$'\t' read -r k v; do
							[[ $k == Umask: ]] && um=$v && break
						done </proc/$$/status
					fi
					[[ -n $um ]] || um=$(umask)
				fi
				umask 077
				set -C
				{ : >"$dir/k.$q"; } 2>/dev/null && claimed=1
				set +C
				umask "$um"
				[[ -n $claimed ]] && break
			done
			[[ -n $claimed || -n $asked ]] && break
			# Nothing found: ask pi-otel, which reads what Pi wrote before
			# this moment (its output, or the session file) and then
			# answers in a.PID; 1<> opens the fifo without blocking, and a
			# line under PIPE_BUF arrives whole.
			asked=1
			[[ -p $ask && ! -L $ask && -O $ask && -p $base/wait && ! -L $base/wait && -O $base/wait ]] || break
			tok=$$-${EPOCHREALTIME-$SECONDS}
			printf 'q %s %s %s %s\n' "$$" "$tok" "$sid" "$file" 1<>"$ask"
			reason=t wait=$((wait * 4))
			while ((wait-- > 0)); do
				if [[ -f $ans && ! -L $ans && -O $ans ]]; then
					got=
					IFS= read -r got <"$ans"
					if [ "$got" = "$tok" ]; then
						reason=
						break
					fi
				fi
				if ! kill -0 "$pid" 2>/dev/null; then
					reason=g
					break
				fi
				read -r -t 0.00025 <>"$base/wait"
			done 2>/dev/null
			[[ -z $reason ]] || break
		done
		if [[ -n $claimed && -n $tp ]]; then
			__pi_otel_found=1
			# "-": a command that keeps the context it has (an RPC bash
			# command).
			if [[ $tp != - ]]; then
				export TRACEPARENT=$tp
				if [[ -n $ts ]]; then export TRACESTATE=$ts; else unset TRACESTATE; fi
			fi
		fi
		# A call that went on without an answer is counted by pi-otel.
		[[ $reason == t ]] && printf 'm %s\n' "$reason" 1<>"$ask"
		return 0
	} 2>/dev/null
	__pi_otel_hook
	unset -f __pi_otel_hook
fi
# Under pi-otel run or rpc, the user's own BASH_ENV is read here, as bash
# would have read it: expanded, not searched in PATH, silently skipped
# when missing, and the status it leaves is $? at the command's start. A
# call that found its context gives its processes the user's BASH_ENV
# back; a bash that found none (one that starts Pi, a user's ! command)
# leaves the hook in place for what it starts.
if [[ -n ${PI_OTEL_HOOK-} ]]; then
	__pi_otel_f=${PI_OTEL_USER_BASH_ENV-}
	if [[ -n ${__pi_otel_found-} ]]; then
		unset PI_OTEL_HOOK PI_OTEL_PID PI_OTEL_HOOK_WAIT_MS PI_OTEL_USER_BASH_ENV
		if [[ -n $__pi_otel_f ]]; then export BASH_ENV=$__pi_otel_f; else unset BASH_ENV; fi
	fi
	if [[ -n $__pi_otel_f ]]; then
		[[ $__pi_otel_f == "~" || $__pi_otel_f == "~/"* ]] && __pi_otel_f='$HOME'${__pi_otel_f:1}
		__pi_otel_q='"'
		eval "__pi_otel_f=\"${__pi_otel_f//\"/\$\{__pi_otel_q\}}\"" 2>/dev/null || __pi_otel_f=
		[[ -z $__pi_otel_f || $__pi_otel_f == */* ]] || __pi_otel_f=./$__pi_otel_f
	fi
	if [[ -n $__pi_otel_f && -e $__pi_otel_f ]]; then
		unset __pi_otel_found __pi_otel_q
		# bash reads BASH_ENV with errexit ignored (so: "|| :"), and the
		# command starts with the $? and $_ of its last command: a RETURN
		# trap takes them as the file (not one it sources) ends.
		__pi_otel_d=${#BASH_SOURCE[@]} __pi_otel_r=
		trap '__pi_otel_t=$_ __pi_otel_e=$?; if ((${#BASH_SOURCE[@]} == __pi_otel_d)); then __pi_otel_u=$__pi_otel_t __pi_otel_r=$__pi_otel_e; trap - RETURN; fi' RETURN
		if [[ -f $__pi_otel_f && -r $__pi_otel_f ]]; then
			. "$__pi_otel_f" || :
		else
			# As bash: an error line, and $? stays 0.
			. "$__pi_otel_f" || :
			__pi_otel_r=0
		fi
		[[ -n $__pi_otel_r ]] || trap - RETURN
		__pi_otel_s=${__pi_otel_r:-0}
		unset __pi_otel_d __pi_otel_r __pi_otel_t __pi_otel_e
	fi
fi
unset __pi_otel_found __pi_otel_f __pi_otel_q
# Last: $? and $_ as they were, and xtrace back on if it was.
__pi_otel_end() {
	[[ $2 == *x* ]] && { set -x; local -; set +x; } 2>/dev/null
	unset -f __pi_otel_end
	unset __pi_otel_s __pi_otel_x __pi_otel_u
	return "$1"
}
# A failing status must not end the shell under errexit, and bash starts
# the command without: "&& :" keeps it (the last of such a list is not
# run, so $_ stays), and the status is the if's.
if ((__pi_otel_s)); then
	__pi_otel_end "$__pi_otel_s" "$__pi_otel_x" "$__pi_otel_u" && :
else
	__pi_otel_end "$__pi_otel_s" "$__pi_otel_x" "$__pi_otel_u"
fi
