#!/usr/bin/env bash
# Runs Pi with the subagent extension Pi ships as an example, traced by
# pi-otel: each child the subagent tool starts becomes an invoke_agent span
# below the tool's execute_tool span, with its own model calls and tools.
#
#   examples/subagents/run.sh "Ask the scout how many Go files there are"
#
# It installs scout.md as a user agent (in $PI_CODING_AGENT_DIR/agents,
# default ~/.pi/agent/agents) and loads the extension from the npm package
# of the pi on PATH. PI is the Pi command line (default: pi), split on
# spaces; its first word is the pi binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
read -ra pi <<<"${PI:-pi}"

agents="${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}/agents"
mkdir -p "$agents"
cp "$here/scout.md" "$agents/scout.md"

# The package root is the nearest directory above the pi binary's target
# that holds a package.json.
dir=$(dirname "$(readlink -f "$(command -v "${pi[0]}")")")
while [[ ! -f "$dir/package.json" && "$dir" != / ]]; do dir=$(dirname "$dir"); done
ext="$dir/examples/extensions/subagent/index.ts"
[[ -f "$ext" ]] || { echo "no subagent extension at $ext" >&2; exit 1; }

pi-otel run -- "${pi[@]}" -e "$ext" --mode json --no-session "$@"
