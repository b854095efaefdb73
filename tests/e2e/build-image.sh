#!/usr/bin/env bash
# build-image.sh OUT.tar REF [BIN_DIR]
#
# Builds the controllers' image without a container engine: sveltos-events-manager and
# sveltos-events-agent at /, the shared libraries they load (from ldd), the public CA
# certificates, and passwd/group
# entries for the non-root user 65532 the Deployments run as; written as a docker-archive tar
# named REF, which `ctr images import`, `docker load` and kube-node's `node.sh load` take.
# Uses umoci and skopeo (Debian: apt-get install umoci skopeo). BIN_DIR defaults to a fresh
# `cargo build --release` of both binaries. The Containerfile at the root builds the same
# image where an engine and a base image can be had.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 OUT.tar REF [BIN_DIR]" >&2
  exit 2
fi
out=$1 ref=$2 bins=${3:-}
for tool in umoci skopeo ldd; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not installed (apt-get install umoci skopeo)" >&2; exit 2; }
done
if [[ -z $bins ]]; then
  cargo build --release --locked -p sveltos-events-controller -p sveltos-events-agent
  bins=target/release
fi
work=$(mktemp -d -t sveltos-events-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/etc" "$root/tmp"
for bin in sveltos-events-manager sveltos-events-agent; do
  [[ -x $bins/$bin ]] || { echo "$0: $bins/$bin is missing; build it first" >&2; exit 2; }
  install -m 0755 "$bins/$bin" "$root/$bin"
  # Debug builds carry hundreds of MB of debug info; release builds are stripped already.
  if command -v strip >/dev/null; then strip --strip-debug "$root/$bin"; fi
  # Every library the dynamic loader resolves, and the loader itself, at the same paths.
  ldd "$bins/$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
    while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
done
# Public roots, for API servers whose certificates a public CA signed (kube-rs reads the
# system's when a kubeconfig names no CA).
certs=/etc/ssl/certs/ca-certificates.crt
[[ -f $certs ]] || { echo "$0: $certs is missing (apt-get install ca-certificates)" >&2; exit 2; }
mkdir -p "$root/etc/ssl/certs"
cp -L "$certs" "$root/etc/ssl/certs/"
echo 'nonroot:x:65532:65532:nonroot:/:/sbin/nologin' >"$root/etc/passwd"
echo 'nonroot:x:65532:' >"$root/etc/group"
chmod 1777 "$root/tmp"

umoci init --layout "$work/oci"
umoci new --image "$work/oci:image"
umoci unpack --rootless --image "$work/oci:image" "$work/bundle" >/dev/null
cp -a "$root/." "$work/bundle/rootfs/"
umoci repack --image "$work/oci:image" "$work/bundle"
umoci config --image "$work/oci:image" \
  --config.user 65532:65532 --config.workingdir / \
  --clear=config.entrypoint --clear=config.cmd --config.entrypoint /sveltos-events-manager \
  --config.label "org.opencontainers.image.title=sveltos-events" \
  --config.label "org.opencontainers.image.version=${ref##*:}"
rm -f "$out"
skopeo copy -q "oci:$work/oci:image" "docker-archive:$out:$ref"
echo "wrote $out ($ref, $(du -h "$out" | cut -f1))"
