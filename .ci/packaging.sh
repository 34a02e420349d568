#!/usr/bin/env bash
# The install-without-Go checks (issue: release builds, a Debian package, a
# container image): build the release artifacts twice from this commit and
# compare them byte for byte (linux/amd64 only, what the checks below
# install; SLUICE_RELEASE=1 builds and compares every target of
# packaging/release.sh, as a release does); check the archives and checksums; install the
# .deb on this machine and, with no Go on PATH, run the quickstart with the
# packaged binary and config; upgrade it over itself and remove it, keeping
# /var/lib/sluice; build the container image and check its config, then run
# its binary from the image's root filesystem (this machine's sandbox lets
# podman build but not run containers: crun may not set rlimits here).
# Runs as root on a Debian machine (CI); it leaves the machine as it found it.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf -- '-- packaging: %s\n' "$*"; }
fail() { echo "packaging: $*" >&2; exit 1; }
# contains PATTERN: whether standard input has a line matching PATTERN. It
# reads all of it, unlike grep -q, whose early exit would fail the writer
# with SIGPIPE under pipefail.
contains() { grep -e "$1" >/dev/null; }

# The checks install a package, a system user and /var/lib/sluice, and use
# podman's storage: all of them the machine's. Two runs at once (CI beside
# another checkout's run) take turns: one run's image build failed when
# another's ran beside it.
# flock -o holds the lock itself, so that no process the checks start
# (a server, podman's helpers) keeps it after they end.
if [ -z "${SLUICE_PACKAGING_LOCKED:-}" ]; then
  flock -n /tmp/sluice-packaging.lock true || log "waiting for another run's packaging checks"
  SLUICE_PACKAGING_LOCKED=1 exec flock -o /tmp/sluice-packaging.lock bash "$0" "$@"
fi

need() { # need BINARY PACKAGE
  command -v "$1" >/dev/null 2>&1 && return
  log "installing $2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
}
need zip zip
need podman podman
need systemd-analyze systemd
need curl curl
need sqlite3 sqlite3

work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  dpkg -P sluice >/dev/null 2>&1 || true
  rm -rf /var/lib/sluice /etc/sluice
  getent passwd sluice >/dev/null && deluser --system --quiet sluice >/dev/null 2>&1 || true
  getent group sluice >/dev/null && delgroup --system --quiet sluice >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if dpkg -s sluice >/dev/null 2>&1; then fail "a sluice package is already installed on this machine; not touching it"; fi

commit=$(git rev-parse HEAD)
# CI installs and runs the linux/amd64 artifacts only; cross-compiling the
# three others from a cold cache took most of this step's time.
archives=(linux_amd64.tar.gz)
if [ "${SLUICE_RELEASE:-}" = 1 ]; then
  unset SLUICE_TARGETS
  archives+=(linux_arm64.tar.gz darwin_arm64.tar.gz windows_amd64.zip)
else
  export SLUICE_TARGETS=linux/amd64
fi
log "release build 1 (this checkout; ${#archives[@]} target(s))"
bash packaging/release.sh "$work/dist1" >"$work/release1.log" || { cat "$work/release1.log"; fail "release build failed"; }
log "release build 2 (a fresh clone at another path)"
git clone -q --no-hardlinks . "$work/clone"
git -C "$work/clone" checkout -q "$commit"
bash "$work/clone/packaging/release.sh" "$work/dist2" >"$work/release2.log" || { cat "$work/release2.log"; fail "second release build failed"; }
for f in "$work"/dist1/*; do
  cmp "$f" "$work/dist2/$(basename "$f")" || fail "$(basename "$f") differs between two builds of $commit"
done
[ "$(ls "$work/dist1" | wc -l)" = "$(ls "$work/dist2" | wc -l)" ] || fail "the two builds made different file lists"
(cd "$work/dist1" && sha256sum --quiet -c checksums.txt) || fail "checksums.txt does not match"
for t in "${archives[@]}"; do
  ls "$work"/dist1/sluice_*_"$t" >/dev/null || fail "no $t archive"
done
[ "$(ls "$work"/dist1/*.tar.gz "$work"/dist1/*.zip 2>/dev/null | wc -l)" = "${#archives[@]}" ] ||
  fail "want the archives ${archives[*]}, got: $(ls "$work/dist1" | tr '\n' ' ')"
listing=$(tar -tzf "$work"/dist1/sluice_*_linux_amd64.tar.gz)
for f in sluice README.md LICENSE sluice.yaml docs/getting-started.md docs/zh/quickstart.md; do
  grep -q "/$f\$" <<<"$listing" || fail "the linux/amd64 archive lacks $f"
done
if [ "${SLUICE_RELEASE:-}" = 1 ]; then
  unzip -l "$work"/dist1/sluice_*_windows_amd64.zip | contains 'sluice.exe' || fail "the windows archive lacks sluice.exe"
fi
log "identical twice; checksums verified: $(ls "$work/dist1" | tr '\n' ' ')"

# A plain `go build` in a checkout knows its commit from Go's VCS stamps
# (this machine's go env turns them off, as GOFLAGS=-buildvcs=false; a
# user's default is auto).
log "a plain go build in the checkout"
GOFLAGS=-buildvcs=auto go build -o "$work/plain-sluice" ./cmd/sluice
"$work/plain-sluice" version | contains "(commit ${commit:0:12}, " || fail "a plain go build's version lacks the commit: $("$work/plain-sluice" version)"

# Everything below runs with no Go on PATH, as on a user's machine.
nogo() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
nogo sh -c '! command -v go' || fail "go is on the clean PATH"

log "the archive's binary"
tar -xzf "$work"/dist1/sluice_*_linux_amd64.tar.gz -C "$work"
bin=$(ls -d "$work"/sluice_*_linux_amd64)/sluice
file "$bin" | contains 'statically linked' || fail "the linux binary is not static: $(file "$bin")"
nogo "$bin" version | contains "commit ${commit:0:12}" || fail "sluice version lacks the commit: $(nogo "$bin" version)"
nogo "$bin" version --json | contains "\"commit\":\"$commit\"" || fail "sluice version --json lacks the commit"

log "the README's quickstart without Go, verbatim, on the archive"
qs=$work/quickstart
mkdir "$qs"
cp "$work"/dist1/sluice_*_linux_amd64.tar.gz "$qs/"
block=$(awk '/run by \.ci\/packaging\.sh/ {found=1; next} found && /^```/ {if (inblock) exit; inblock=1; next} inblock {print}' README.md)
[ -n "$block" ] || fail "no quickstart-without-Go block in README.md"
(cd "$qs" && nogo bash -ec "$block"$'\n''echo $! >"$0"' "$qs/worker.pid" >"$qs/out.log" 2>&1) || fail "the README's quickstart without Go failed: $(cat "$qs/out.log")"
qsdir=$(ls -d "$qs"/sluice_*_linux_amd64)
for _ in $(seq 1 100); do
  (cd "$qsdir" && nogo ./sluice --config sluice.yaml jobs list --json 2>/dev/null) | contains '"status":"success"' && break
  sleep 0.2
done
(cd "$qsdir" && nogo ./sluice --config sluice.yaml jobs list --json) | contains '"status":"success"' || fail "the quickstart's job did not succeed: $(cat "$qs/out.log")"
kill -TERM "$(cat "$qs/worker.pid")"
log "quickstart without Go: the greet job succeeded"

log "installing the .deb"
deb=$(ls "$work"/dist1/sluice_*_amd64.deb)
dpkg -i "$deb" >/dev/null
[ "$(command -v sluice)" = /usr/bin/sluice ] || fail "sluice is not /usr/bin/sluice"
getent passwd sluice >/dev/null || fail "no sluice system user"
[ -d /var/lib/sluice ] && [ "$(stat -c %U /var/lib/sluice)" = sluice ] || fail "/var/lib/sluice is not the sluice user's"
dpkg-query -W -f='${Conffiles}\n' sluice | contains /etc/sluice/sluice.yaml || fail "/etc/sluice/sluice.yaml is not a conffile"
dpkg-query -W -f='${Conffiles}\n' sluice | contains /etc/sluice/sluice.env || fail "/etc/sluice/sluice.env is not a conffile"
for f in /etc/sluice/sluice.yaml /etc/sluice/sluice.env; do
  [ "$(stat -c '%a %U:%G' "$f")" = "640 root:sluice" ] || fail "$f is $(stat -c '%a %U:%G' "$f"), not 640 root:sluice"
done
nogo sluice version | contains "commit ${commit:0:12}" || fail "the packaged sluice version lacks the commit"
# Without a running systemd, verify still parses the units and checks every
# directive; what it cannot do here (reach the manager) is not a finding.
systemd-analyze verify /usr/lib/systemd/system/sluice.service /usr/lib/systemd/system/sluice-work@.service >"$work/verify.log" 2>&1 || true
if grep -v 'Failed to \|Cannot open\|No such file\|not found\|System has not been booted' "$work/verify.log" | contains .; then
  cat "$work/verify.log"; fail "systemd-analyze verify complained"
fi

as_sluice() { nogo runuser -u sluice -- "$@"; }
cfg=/etc/sluice/sluice.yaml
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log "the quickstart with the packaged binary and config (serve on :$port)"
as_sluice sluice --config $cfg migrate >/dev/null
# setpriv execs sluice itself (runuser would stay as its parent and answer
# the SIGTERM below with its own "killed"), so $server is sluice's pid.
(cd /var/lib/sluice && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  setpriv --reuid=sluice --regid=sluice --init-groups sluice --config $cfg serve --listen "127.0.0.1:$port" 2>"$work/serve.log") &
server=$!
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >"$work/health.json" 2>/dev/null && break; sleep 0.1; done
grep -q "\"commit\":\"$commit\"" "$work/health.json" || fail "/healthz lacks the commit: $(cat "$work/health.json" 2>/dev/null; cat "$work/serve.log")"
as_sluice sluice --config $cfg enqueue greet --key welcome:Ann --payload '{"name":"Ann"}' >/dev/null
for _ in $(seq 1 100); do
  as_sluice sluice --config $cfg jobs list --json 2>/dev/null | contains '"status":"success"' && break
  sleep 0.2
done
as_sluice sluice --config $cfg jobs show 1 | contains 'job 1 (attempt 1): {' || fail "the greet job did not run: $(as_sluice sluice --config $cfg jobs show 1; cat "$work/serve.log")"
# docs/deploy.md: CLI commands run as the sluice user; another user is
# told why it cannot.
if out=$(nogo setpriv --reuid=nobody --regid=nogroup --clear-groups sluice --config $cfg jobs list 2>&1); then
  fail "a user outside the sluice group read the packaged config: $out"
fi
contains 'sluice.yaml: permission denied' <<<"$out" || fail "another user's error does not say permission denied: $out"

log "the backup command of docs/deploy.md, while serve runs"
sqlite3 /var/lib/sluice/sluice.db ".backup '/var/backups/sluice-$(date +%F).db'"
backup=/var/backups/sluice-$(date +%F).db
[ "$(sqlite3 "$backup" "SELECT status FROM sluice_jobs WHERE id = 1")" = success ] || fail "the backup lacks job 1"
rm -f "$backup"
kill -TERM "$server"; wait "$server" || fail "serve did not exit 0 on SIGTERM: $(cat "$work/serve.log")"
server=

log "upgrading the package over itself"
dpkg -i "$deb" >/dev/null
as_sluice sluice --config $cfg jobs show 1 | contains '"status": *"success"' || fail "job 1 is gone after the upgrade"
log "removing it"
dpkg -r sluice >/dev/null
[ ! -e /usr/bin/sluice ] || fail "/usr/bin/sluice is still there after removal"
[ -s /var/lib/sluice/sluice.db ] || fail "/var/lib/sluice/sluice.db was lost on removal"
dpkg -P sluice >/dev/null
[ -s /var/lib/sluice/sluice.db ] || fail "/var/lib/sluice/sluice.db was lost on purge"
log "removed and purged; /var/lib/sluice/sluice.db kept"

log "the container image"
tag=$(bash packaging/image.sh "$work/dist1" amd64)
want='65532:65532 [/usr/bin/sluice --config /etc/sluice/sluice.yaml] [serve] map[/etc/sluice:{} /var/lib/sluice:{}]'
got=$(podman image inspect "$tag" --format '{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Cmd}} {{.Config.Volumes}}')
[ "$got" = "$want" ] || fail "image config: got '$got', want '$want'"
layers=$(podman image inspect "$tag" --format '{{len .RootFS.Layers}}')
ran=0
podman run --rm "$tag" version >/dev/null 2>&1 && ran=1
root=$work/rootfs
mkdir "$root"
cid=$(podman create "$tag")
podman export "$cid" | tar -x -C "$root"
podman rm -f "$cid" >/dev/null
contents=$(cd "$root" && find . -type f | LC_ALL=C sort | tr '\n' ' ')
[ "$contents" = "./etc/sluice/sluice.yaml ./etc/ssl/certs/ca-certificates.crt ./usr/bin/sluice " ] || fail "the image holds more than the binary, CA certificates and config: $contents"
[ "$(stat -c '%a %u:%g' "$root/etc/sluice/sluice.yaml")" = "444 0:0" ] || fail "the image's config is $(stat -c '%a %u:%g' "$root/etc/sluice/sluice.yaml"), not 444 root's"
if [ $ran = 1 ]; then
  podman run --rm "$tag" version | contains "commit ${commit:0:12}" || fail "podman run of the image: version lacks the commit"
  log "podman ran the image (sluice version); its root filesystem is also run below"
else
  log "podman cannot run containers here; running the image's binary from its root filesystem as user 65532"
fi
mkdir -p "$root/dev" "$root/tmp" && chmod 1777 "$root/tmp"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
chroot --userspec=65532:65532 "$root" /usr/bin/sluice --config /etc/sluice/sluice.yaml migrate >/dev/null
SLUICE_TOKEN=ci-token-Lz6Wf2Nh8Xs4Db9K chroot --userspec=65532:65532 "$root" /usr/bin/sluice --config /etc/sluice/sluice.yaml serve --listen "127.0.0.1:$port" 2>"$work/image-serve.log" &
server=$!
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >"$work/health.json" 2>/dev/null && break; sleep 0.1; done
grep -q "\"commit\":\"$commit\"" "$work/health.json" || fail "the image's serve did not answer /healthz: $(cat "$work/image-serve.log")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/stats")
[ "$code" = 401 ] || fail "the image's API answered $code without a token, want 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ci-token-Lz6Wf2Nh8Xs4Db9K' "http://127.0.0.1:$port/v1/stats")
[ "$code" = 200 ] || fail "the image's API answered $code with the token, want 200"
kill -TERM "$server"; wait "$server" || fail "the image's serve did not exit 0 on SIGTERM"
server=
podman rmi -f "$tag" >/dev/null
log "ok ($layers layer(s); image config, contents and binary checked)"
