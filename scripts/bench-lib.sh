# shellcheck shell=bash
# The start the bench scripts share; they source it. ROOT is the
# repository, DIR the bench directory (BENCH_DIR, default
# $TMPDIR/pi-otel-bench), log writes a line to stderr and build compiles
# the module's commands into DIR.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${BENCH_DIR:-${TMPDIR:-/tmp}/pi-otel-bench}"

log() { printf '%s\n' "$*" >&2; }
mkdir -p "$DIR"

# build PKG... builds each main package into $DIR, named after its folder.
build() {
	local pkg
	for pkg in "$@"; do
		log "$(basename "$0" .sh): building ${pkg##*/}"
		(cd "$ROOT" && go build -o "$DIR/${pkg##*/}" "$pkg")
	done
}
