#!/usr/bin/env bash
# Writes every grouped Go import block as one import declaration a line
# (docs/architecture.md, "Imports"). With --check it changes nothing and
# fails, naming the files, if any grouped block is left; scripts/test.sh
# runs it that way.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

mapfile -t grouped < <(git ls-files -co --exclude-standard '*.go' | xargs -r grep -l '^import ($' || true)
if [[ "${1:-}" == "--check" ]]; then
	if ((${#grouped[@]})); then
		echo "imports: grouped import blocks in these files; run scripts/imports.sh:" >&2
		printf '%s\n' "${grouped[@]}" >&2
		exit 1
	fi
	exit 0
fi
for f in "${grouped[@]}"; do
	# Inside a block: a spec becomes "import SPEC"; blank lines (the groups)
	# and comments stay as they are.
	awk '
		/^import \($/ { inblock = 1; next }
		inblock && /^\)$/ { inblock = 0; next }
		inblock {
			sub(/^[ \t]+/, "")
			if ($0 == "" || $0 ~ /^\/\//) print; else print "import " $0
			next
		}
		{ print }
	' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
