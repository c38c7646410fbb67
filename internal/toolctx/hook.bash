# pi-otel's BASH_ENV hook: it gives the processes of one bash call the trace
# context (TRACEPARENT, TRACESTATE) of the Pi tool call that started it.
# It prints nothing, forks nothing and leaves the shell's options as they
# were; see docs/configuration.md, Propagation. Written by pi-otel.
if [[ -z ${__pi_otel_done-} ]] && ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404)); then
	__pi_otel_done=1
	__pi_otel_hook() {
		local -
		set +euxo pipefail
		set +C
		local LC_ALL=C
		local dir=${PI_OTEL_HOOK-} s=${BASH_EXECUTION_STRING-} pid=${PI_OTEL_PID-}
		local wait=${PI_OTEL_HOOK_WAIT_MS:-500} base
		if [[ -z $dir && -n ${PI_SESSION_ID-} ]]; then
			# A plain pi, traced by pi-otel watch: its entries are kept
			# per session, and its pid in the directory's watch file.
			base=${PI_OTEL_PROPAGATION_DIR-}
			if [[ -z $base ]]; then
				if [[ -n ${XDG_RUNTIME_DIR-} ]]; then base=$XDG_RUNTIME_DIR/pi-otel; else base=${TMPDIR:-/tmp}; base=${base%/}/pi-otel-$UID; fi
			fi
			dir=$base/s-$PI_SESSION_ID
			[[ -r $base/watch.pid && -n $s ]] || return 0
			IFS= read -r pid <"$base/watch.pid"
			# A new session's first calls can come before watch has read
			# its file.
			local waits=$((wait / 2))
			while [[ ! -d $dir ]] && ((waits-- > 0)) && kill -0 "$pid" 2>/dev/null; do
				read -r -t 0.002 <>"$base/wait" 2>/dev/null
			done
		fi
		[[ -n $dir && -n $s && -d $dir ]] || return 0
		local cand n k h i pos c key e claim claimed= tp= ts= reason=n tries lag= pi= seen polls=$((wait / 2))
		local -a m
		while :; do
			# The command, or, when a shellCommandPrefix came first, what
			# follows one of its first lines.
			key= cand=$s tries=0
			while :; do
				n=${#cand}
				m=("$dir"/c."$n"-*)
				if [[ -e ${m[1]-} ]]; then
					# Calls of one length: the key's hash tells them apart.
					k=$((n < 64 ? n : 64)) h=2166136261
					for ((i = 0; i < k; i++)); do
						pos=0
						((k > 1)) && pos=$((i * (n - 1) / (k - 1)))
						printf -v c '%d' "'${cand:pos:1}"
						h=$((((h ^ (c & 255)) * 16777619) & 0xFFFFFFFF))
					done
					printf -v key '%d-%08x' "$n" "$h"
					m=("$dir"/c."$key".*)
					[[ -e ${m[0]} ]] && break
					key=
				elif [[ -e ${m[0]} ]]; then
					# The one call of this length: no hash needed.
					key=$n
					break
				fi
				[[ $cand == *$'\n'* ]] && ((++tries <= 8)) || break
				cand=${cand#*$'\n'}
			done
			if [[ -n $key ]]; then
				for e in "${m[@]}"; do
					claim=$dir/k.${e#"$dir"/c.}
					# noclobber: of parallel calls with one key, each
					# claims its own entry.
					set -C
					if { : >"$claim"; } 2>/dev/null; then
						claimed=1
					fi
					set +C
					[[ -n $claimed ]] && break
				done
			fi
			[[ -n $claimed ]] && break
			if [[ -z $lag ]]; then
				# Nothing found: only a bash call of the Pi whose output
				# pi-otel reads waits for its entry, since Pi starts it
				# right after writing the message that asks for it, which
				# pi-otel may not have read yet.
				# (A plain pi traced by watch: any bash of the session.)
				lag=y
				if [[ -r $dir/pi.pid ]]; then
					IFS= read -r pi <"$dir/pi.pid"
					[[ $PPID == "$pi" ]] || lag=n
				fi
				# Traced from its session file: pi-otel has read the whole
				# file, assistant message included, when the file is no
				# newer than its seen- mark; then nothing more will come.
				seen=$dir/seen-${PI_SESSION_ID-}
				if [[ -n ${PI_SESSION_FILE-} && -e $seen && ! $PI_SESSION_FILE -nt $seen ]]; then
					lag=n
				fi
			fi
			if [[ $lag != y ]]; then
				# No tool call of Pi's (a wrapper of Pi, a subagent's
				# bash, a ! command): nothing missed.
				reason=
				break
			fi
			if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
				reason=g
				break
			fi
			((polls-- > 0)) || break
			read -r -t 0.002 <>"$dir/wait" 2>/dev/null
		done
		# A claimed entry is empty until pi-otel knows the call's context.
		while [[ -n $claimed ]]; do
			tp= ts=
			{ IFS= read -r tp && IFS= read -r ts; } <"$e" 2>/dev/null
			if [[ -n $tp ]]; then
				reason=
				break
			fi
			if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
				reason=g
				break
			fi
			if ((polls-- <= 0)); then
				reason=t
				break
			fi
			read -r -t 0.002 <>"$dir/wait" 2>/dev/null
		done
		if [[ -n $tp ]]; then
			__pi_otel_found=1
			# "-": a command that keeps the context it has (an RPC bash
			# command).
			if [[ $tp != - ]]; then
				export TRACEPARENT=$tp
				if [[ -n $ts ]]; then export TRACESTATE=$ts; else unset TRACESTATE; fi
			fi
		fi
		[[ -n $reason ]] && printf %s "$reason" >>"$dir/misses" 2>/dev/null
		return 0
	}
	__pi_otel_hook
	unset -f __pi_otel_hook
fi
# The user's own BASH_ENV is read here, where bash would have read it. The
# processes of a call that got its context see the user's BASH_ENV, as
# they would without pi-otel; a bash that found no call (one that starts
# Pi, a user's ! command) leaves the hook in place for what it starts.
if [[ -n ${PI_OTEL_HOOK-} ]]; then
	__pi_otel_user=${PI_OTEL_USER_BASH_ENV-}
	if [[ -n ${__pi_otel_found-} ]]; then
		unset PI_OTEL_HOOK PI_OTEL_PID PI_OTEL_HOOK_WAIT_MS PI_OTEL_USER_BASH_ENV
		if [[ -n $__pi_otel_user ]]; then export BASH_ENV=$__pi_otel_user; else unset BASH_ENV; fi
	fi
	unset __pi_otel_found
	if [[ -n $__pi_otel_user ]]; then
		. "$__pi_otel_user"
	fi
	unset __pi_otel_user
fi
