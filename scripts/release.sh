#!/usr/bin/env bash
# Builds pi-otel's release artifacts into dist/ and publishes nothing:
# archives and SHA-256 checksums for linux and darwin on amd64 and arm64,
# .deb and .rpm packages (tools/release, which packages with nfpm), and the
# npm packages (dist/npm/*.tgz: pi-otel and one per platform, built from the
# archives).
#
#   scripts/release.sh --snapshot   any commit, any tree: a prerelease version
#                                   after the last tag, for tests and trials
#   scripts/release.sh              a clean tree at a vX.Y.Z tag: the release,
#                                   then what to publish where
#
# Needs Go, git and npm; no network beyond the Go module proxy (none once the
# modules are downloaded). The release tool is the build scripts/deps.sh keeps
# in $PI_OTEL_RELEASE_TOOL, else `go run` builds it from tools/release (about
# 2 minutes the first time). docs/releasing.md is the maintainer's guide.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# npm pack takes the files' modes from the umask: fix it, so that the npm
# tarballs are the same bytes whatever the caller's.
umask 022

snapshot=false
case "${1:-}" in
--snapshot) snapshot=true ;;
"") ;;
-h | --help)
	sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 0
	;;
*)
	echo "release.sh: unknown argument $1 (--snapshot or none)" >&2
	exit 2
	;;
esac

die() { printf 'release.sh: %s\n' "$*" >&2; exit 1; }

release_tool() {
	if [[ -n "${PI_OTEL_RELEASE_TOOL:-}" && -x "$PI_OTEL_RELEASE_TOOL" ]]; then
		"$PI_OTEL_RELEASE_TOOL" "$@"
	else
		go run -C "$ROOT/tools/release" . "$@"
	fi
}

command -v npm >/dev/null || die "npm is needed to pack the npm packages"

if $snapshot; then
	release_tool -root "$ROOT" -snapshot
else
	tag="$(git describe --exact-match --tags --match 'v[0-9]*' HEAD 2>/dev/null)" ||
		die "HEAD has no vX.Y.Z tag: tag the release commit first (docs/releasing.md), or pass --snapshot"
	[[ -z "$(git status --porcelain)" ]] || die "the work tree has changes; a release is built from a clean tree"
	release_tool -root "$ROOT"
fi

# --- npm ---------------------------------------------------------------------
# One package per platform holds that platform's binary, taken from the
# archive (the bytes the checksums name); the main package holds the
# launcher and depends on all of them as optional dependencies, of which npm
# installs the one whose os and cpu match.
version="$(sed -n 's/.*"version":[[:space:]]*"\([^"]*\)".*/\1/p' dist/metadata.json | head -n1)"
[[ -n "$version" ]] || die "no version in dist/metadata.json"
repo_json='{"type": "git", "url": "git+https://github.com/pi-otel/pi-otel.git"}'
npm_dir="dist/npm"
rm -rf "$npm_dir"
mkdir -p "$npm_dir"
optional=""
for archive in dist/pi-otel_"$version"_*.tar.gz; do
	base="$(basename "$archive" .tar.gz)"
	goos="${base#pi-otel_"$version"_}"
	goos="${goos%_*}"
	goarch="${base##*_}"
	case "$goarch" in
	amd64) cpu=x64 ;;
	arm64) cpu=arm64 ;;
	*) die "no npm cpu for $goarch" ;;
	esac
	name="pi-otel-$goos-$cpu"
	src="$npm_dir/src/$name"
	mkdir -p "$src/bin"
	tar -xzf "$archive" -C "$src/bin" --strip-components=1 "$base/pi-otel"
	cp LICENSE "$src/"
	cat >"$src/package.json" <<EOF
{
  "name": "$name",
  "version": "$version",
  "description": "The $goos $cpu binary of pi-otel. Install pi-otel, which picks this package on $goos $cpu.",
  "license": "Apache-2.0",
  "repository": $repo_json,
  "homepage": "https://github.com/pi-otel/pi-otel",
  "os": ["$goos"],
  "cpu": ["$cpu"],
  "files": ["bin/pi-otel"],
  "preferUnplugged": true
}
EOF
	printf '%s\n' "# $name" "" "The $goos $cpu binary of [pi-otel](https://www.npmjs.com/package/pi-otel)," \
		"which installs it for you: \`npm install -g pi-otel\`." >"$src/README.md"
	optional+="${optional:+,}
    \"$name\": \"$version\""
done
[[ -n "$optional" ]] || die "no archives of version $version in dist/"

main="$npm_dir/src/pi-otel"
mkdir -p "$main/bin"
cp packaging/npm/pi-otel "$main/bin/pi-otel"
chmod 0755 "$main/bin/pi-otel"
cp LICENSE "$main/"
cp packaging/npm/README.md "$main/README.md"
cat >"$main/package.json" <<EOF
{
  "name": "pi-otel",
  "version": "$version",
  "description": "OpenTelemetry traces and metrics for the Pi coding agent",
  "keywords": ["pi", "opentelemetry", "tracing", "coding-agent", "otel"],
  "license": "Apache-2.0",
  "repository": $repo_json,
  "homepage": "https://github.com/pi-otel/pi-otel",
  "bugs": "https://github.com/pi-otel/pi-otel/issues",
  "bin": {"pi-otel": "bin/pi-otel"},
  "files": ["bin/pi-otel"],
  "os": ["linux", "darwin"],
  "cpu": ["x64", "arm64"],
  "optionalDependencies": {$optional
  }
}
EOF

# One npm for all five: each start of npm costs seconds.
npm pack --silent --pack-destination "$npm_dir" "$npm_dir"/src/*/ >/dev/null || die "npm pack"
rm -rf "$npm_dir/src"

echo
echo "release.sh: built version $version in dist/:"
(cd dist && ls -1 ./*.tar.gz ./*.deb ./*.rpm ./*_checksums.txt npm/*.tgz | sed 's|^\./||; s/^/  /')

if $snapshot; then
	echo "A snapshot: nothing to publish."
	exit 0
fi
cat <<EOF

Nothing is published yet. To publish $tag (docs/releasing.md):
  1. git push origin $tag
  2. GitHub release $tag, assets: dist/*.tar.gz dist/*.deb dist/*.rpm dist/pi-otel_${version}_checksums.txt
       gh release create $tag --verify-tag --notes-file <(the CHANGELOG section of $tag) \\
         dist/*.tar.gz dist/*.deb dist/*.rpm dist/pi-otel_${version}_checksums.txt
  3. npm, the platform packages first, then pi-otel, which depends on them:
EOF
# A prerelease must not become what `npm install pi-otel` gets.
npm_tag=""
[[ "$version" == *-* ]] && npm_tag=" --tag next"
for t in "$npm_dir"/pi-otel-linux-*.tgz "$npm_dir"/pi-otel-darwin-*.tgz; do
	echo "       npm publish$npm_tag $t"
done
echo "       npm publish$npm_tag $npm_dir/pi-otel-$version.tgz"
echo "  4. the .deb and .rpm are release assets above; an apt or yum repository takes the same files."
