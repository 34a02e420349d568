#!/usr/bin/env bash
# Builds sluice's release artifacts from the checked-out commit into OUTDIR
# (default dist/): static binaries (CGO off; the SQLite driver is pure Go)
# for linux/amd64, linux/arm64, darwin/arm64 and windows/amd64, each in an
# archive with the README and its guides (docs/), the licence and an
# example config; Debian packages for linux/amd64 and linux/arm64 (nFPM,
# pinned in packaging/tools/go.mod); and checksums.txt (SHA-256).
#
#   bash packaging/release.sh [OUTDIR]
#
# Two runs on the same commit give byte-identical files: every timestamp is
# the commit's time (SOURCE_DATE_EPOCH), paths are trimmed, archive entries
# are sorted with fixed owners, and gzip stores no name or time.
# SLUICE_VERSION overrides the version (default: the tag at HEAD, else a Go
# pseudo-version v0.0.0-<commit time>-<commit>); SLUICE_TARGETS overrides
# the platform list.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}

if [ -n "$(git status --porcelain --untracked-files=no)" ] && [ "${SLUICE_ALLOW_DIRTY:-}" != 1 ]; then
  echo "release.sh: the work tree has uncommitted changes; a release is built from a commit (SLUICE_ALLOW_DIRTY=1 to build anyway)" >&2
  exit 2
fi
commit=$(git rev-parse HEAD)
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
version=${SLUICE_VERSION:-$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null ||
  echo "v0.0.0-$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S)-${commit:0:12}")}
targets=${SLUICE_TARGETS:-linux/amd64 linux/arm64 darwin/arm64 windows/amd64}
pkg=github.com/sluicehq/sluice/internal/buildinfo
ldflags="-s -w -X $pkg.version=$version -X $pkg.commit=$commit -X $pkg.date=$date"

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
echo "== sluice $version (commit ${commit:0:12}, $date) into $out/"

for t in $targets; do
  os=${t%/*} arch=${t#*/}
  name=sluice_${version#v}_${os}_${arch}
  exe=sluice
  [ "$os" = windows ] && exe=sluice.exe
  mkdir -p "$stage/$name"
  echo "-- $t"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$ldflags" \
    -o "$stage/$name/$exe" ./cmd/sluice
  cp README.md LICENSE "$stage/$name/"
  # The guides the README links to, so that its links work in the archive.
  mkdir -p "$stage/$name/docs/zh"
  cp docs/*.md docs/*.jpg "$stage/$name/docs/"
  cp docs/zh/*.md "$stage/$name/docs/zh/"
  cp examples/quickstart/sluice.yaml "$stage/$name/sluice.yaml"
  find "$stage/$name" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  if [ "$os" = windows ]; then
    (cd "$stage" && find "$name" | LC_ALL=C sort | TZ=UTC zip -q -X -@ "$out/$name.zip")
  else
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --mode='u+rwX,go+rX,go-w' -C "$stage" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
  fi
  if [ "$os" = linux ]; then
    # nFPM expands variables in the version and arch but not in a
    # content's src, so the binary's path is written into a copy.
    sed "s|\${SLUICE_BIN}|$stage/$name/sluice|" packaging/nfpm.yaml >"$stage/nfpm.yaml"
    SLUICE_VERSION=$version SLUICE_ARCH=$arch \
      go tool -modfile=packaging/tools/go.mod nfpm package --config "$stage/nfpm.yaml" \
      --packager deb --target "$out/sluice_${version#v}_${arch}.deb" >/dev/null
  fi
done

(cd "$out" && shopt -s nullglob && sha256sum -- *.tar.gz *.zip *.deb | LC_ALL=C sort -k2 >checksums.txt)
echo "== $out/checksums.txt"
cat "$out/checksums.txt"
