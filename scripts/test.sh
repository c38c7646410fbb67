#!/usr/bin/env bash
# The project's test command: installs the real tools (scripts/deps.sh), then
# gofmt, goimports, go vet (also for darwin), staticcheck, go build and
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
# The tests build off Linux too: Linux-only process control lives in
# _linux.go files.
GOOS=darwin go vet -tags realstack ./...

echo "== staticcheck"
# Pinned in go.mod's tool block; any finding fails. Both builds: an
# editor's staticcheck runs without the realstack tag.
go tool staticcheck ./...
go tool staticcheck -tags realstack ./...

echo "== go build"
go build -tags realstack ./...

echo "== go test"
# Real Pi runs and a real Jaeger make the e2e packages slow-ish; the timeout
# guards against a hung child, well under CI's 90 minutes. Most of a test's
# time is waiting on its own Pi, Jaeger or Collector, so four at a time
# per package (t.Parallel) fit on two cores. The slowest packages are named
# first, so that they start first instead of last in import-path order.
go test -tags realstack -count=1 -timeout 20m -parallel 4 "$@" \
	./test/e2e ./collector ./internal/app ./...
