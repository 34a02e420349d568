#!/usr/bin/env bash
# Builds sluice's container image with podman (no Docker daemon) from the
# linux archive that release.sh put in DIST, and saves it there as an OCI
# archive, sluice_<version>_linux_<arch>.oci.tar, for `podman load` or
# `skopeo copy`. Its layers and config carry the commit's time, so a
# rebuild has the same image ID (the archive around it is not byte-for-byte
# the same: podman stamps its own index).
#
#   bash packaging/image.sh DIST [ARCH]      # ARCH: amd64 (default) or arm64
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:?usage: packaging/image.sh DIST [ARCH]}
arch=${2:-amd64}
archive=$(ls "$dist"/sluice_*_linux_"$arch".tar.gz)
base=$(basename "$archive" .tar.gz)
version=v${base#sluice_}
version=${version%_linux_"$arch"}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
tar -xzf "$archive" -C "$ctx" "$base/sluice"
mv "$ctx/$base/sluice" "$ctx/sluice"
cp /etc/ssl/certs/ca-certificates.crt packaging/Containerfile packaging/container.yaml "$ctx/"
mkdir "$ctx/state"
tag=localhost/sluice:${version#v}
podman build --quiet --platform "linux/$arch" --timestamp "$SOURCE_DATE_EPOCH" \
  --file "$ctx/Containerfile" --tag "$tag" "$ctx" >/dev/null
rm -f "$dist/${base}.oci.tar"
podman save --quiet --format oci-archive --output "$dist/${base}.oci.tar" "$tag"
echo "$tag"
