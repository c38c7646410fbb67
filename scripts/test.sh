#!/usr/bin/env bash
# The project's test command: installs the real tools (scripts/deps.sh), then
# gofmt, goimports, go vet (also for darwin), staticcheck, go build, a
# snapshot release checked as users get it (when its inputs changed), and
# go test over the whole module.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE="${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}"

bash scripts/deps.sh >/dev/null
# shellcheck source=/dev/null
source "$CACHE/env.sh"

# With -trimpath the build cache keys on content, not on where the clone
# sits, so a fresh clone of a cached tree compiles nothing (vet and
# staticcheck too).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

echo "== gofmt"
unformatted="$(gofmt -l .)"
if [[ -n "$unformatted" ]]; then
	echo "gofmt: these files need formatting:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== goimports"
# Grouped blocks as goimports writes them, so an editor's save and CI agree.
misgrouped="$(go tool goimports -local github.com/pi-otel/pi-otel -l .)"
if [[ -n "$misgrouped" ]]; then
	echo "goimports: these files need goimports -local github.com/pi-otel/pi-otel -w:" >&2
	echo "$misgrouped" >&2
	exit 1
fi

echo "== go vet"
go vet -tags realstack ./...
go vet -tags release ./test/release
# The tests build off Linux too: Linux-only process control lives in
# _linux.go files.
GOOS=darwin go vet -tags realstack ./...
# The release tool is a module of its own.
(cd tools/release && go vet ./...)

echo "== staticcheck"
# Pinned in go.mod's tool block; any finding fails. Both builds: an
# editor's staticcheck runs without the realstack tag.
go tool staticcheck ./...
go tool staticcheck -tags realstack ./...
go tool staticcheck -tags release ./test/release
staticcheck="$(go tool -n staticcheck)"
(cd tools/release && "$staticcheck" ./...)

echo "== go build"
go build -tags realstack ./...

echo "== release"
# scripts/release.sh --snapshot, then test/release on what it built (the
# archives, the binaries of all four platforms, the npm, deb and rpm
# packages). Cold it costs minutes (three more platforms to compile), so it
# runs only when what goes into a release changed since a passing check:
# the key hashes those files as they are on disk (tracked or new), the Go
# toolchain and the release tool's build. PI_OTEL_RELEASE_CHECK=always forces it.
release_key="$(
	{
		go version
		echo "$PI_OTEL_RELEASE_TOOL"
		git ls-files -z --cached --others --exclude-standard -- \
			cmd internal mapper go.mod go.sum packaging scripts/release.sh tools/release \
			LICENSE README.md CHANGELOG.md docs examples/watch-systemd/README.md test/release |
			grep -zv -e '_test\.go$' -e '/testdata/' -e '^internal/testutil/' |
			xargs -0 sha256sum 2>&1 || true # a file deleted but not yet from git: its error line
		sha256sum test/release/*.go
	} | sha256sum | cut -c1-16
)"
release_ok="$CACHE/release-ok/$release_key"
if [[ -e "$release_ok" && "${PI_OTEL_RELEASE_CHECK:-}" != always ]]; then
	echo "release inputs unchanged since a passing check ($release_key): skipped"
else
	(cd tools/release && go test -count=1 ./...)
	./scripts/release.sh --snapshot >"$CACHE/release.log" 2>&1 ||
		{ tail -n 40 "$CACHE/release.log" >&2; echo "release.sh --snapshot failed (log: $CACHE/release.log)" >&2; exit 1; }
	PI_OTEL_DIST="$ROOT/dist" go test -tags release -count=1 ./test/release
	mkdir -p "$CACHE/release-ok"
	touch "$release_ok"
fi

echo "== go test"
# Real Pi runs and a real Jaeger make the e2e packages slow-ish; the timeout
# guards against a hung child, well under CI's 90 minutes. Most of a test's
# time is waiting on its own Pi, Jaeger or Collector, so four at a time
# per package (t.Parallel) fit on two cores. The slowest packages are named
# first, so that they start first instead of last in import-path order.
go test -tags realstack -count=1 -timeout 20m -parallel 4 "$@" \
	./test/e2e ./collector ./internal/app ./...
