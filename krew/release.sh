#!/usr/bin/env bash
# Builds the plugin's release archives and renders the krew manifest for them.
#
# Usage: krew/release.sh [--bin-dir DIR] [--out DIR] [--base-url URL] [TARGET...]
#
#   TARGET      Rust target triples to build (default: x86_64-unknown-linux-gnu, what a
#               Linux amd64 machine builds; the other platforms come from the CI matrix in
#               krew/README.md, their archives dropped into OUT before the last run).
#   --bin-dir   take the binary from DIR instead of building it (one target only; tests use
#               the debug build).
#   --out       where archives and the manifest go (default: dist).
#   --base-url  where the archives will be downloaded from (default: the GitHub release of
#               this version).
#
# Each archive holds the plugin binary, LICENSE and README.md, and on Linux and macOS
# kubectl_complete-sveltos_events (kubectl's completion hook); tar archives are
# reproducible (sorted, no owners, no times). The manifest gets one platform per archive of
# this version found in OUT, with its sha256. Exit 0 on success, 1 when a step fails, 2 on
# bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
bin_dir="" out="$root/dist" base_url="" targets=()
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --base-url) base_url=${2:?--base-url needs a URL}; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "release.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(x86_64-unknown-linux-gnu)
if [[ -n "$bin_dir" && ${#targets[@]} -gt 1 ]]; then
  echo "release.sh: --bin-dir takes one target" >&2; exit 2
fi

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")
[[ -n "$version" ]] || { echo "release.sh: no version in Cargo.toml" >&2; exit 1; }
base_url=${base_url:-https://github.com/sveltos-events/sveltos-events/releases/download/v$version}
mkdir -p "$out"

# os, arch and archive extension of a target triple.
platform() {
  case "$1" in
    x86_64-unknown-linux-*) echo "linux amd64 tar.gz" ;;
    aarch64-unknown-linux-*) echo "linux arm64 tar.gz" ;;
    x86_64-apple-darwin) echo "darwin amd64 tar.gz" ;;
    aarch64-apple-darwin) echo "darwin arm64 tar.gz" ;;
    x86_64-pc-windows-*) echo "windows amd64 zip" ;;
    *) return 1 ;;
  esac
}

for target in "${targets[@]}"; do
  read -r os arch ext < <(platform "$target") \
    || { echo "release.sh: no krew platform for target $target" >&2; exit 2; }
  exe=kubectl-sveltos_events
  [[ "$os" == windows ]] && exe+=.exe
  dir=$bin_dir
  if [[ -z "$dir" ]]; then
    echo "building $target"
    cargo build --release --locked -p kubectl-sveltos-events --target "$target" \
      --manifest-path "$root/Cargo.toml"
    dir="$root/target/$target/release"
  fi
  [[ -x "$dir/$exe" ]] || { echo "release.sh: $dir/$exe is not built" >&2; exit 1; }
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  cp "$dir/$exe" "$root/LICENSE" "$root/README.md" "$stage/"
  name="kubectl-sveltos_events-v$version-$os-$arch.$ext"
  rm -f "$out/$name"
  if [[ "$ext" == zip ]]; then
    (cd "$stage" && TZ=UTC zip -q -X -D "$out/$name" "$exe" LICENSE README.md)
  else
    cp "$here/kubectl_complete-sveltos_events" "$stage/"
    tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
      -cf - "$exe" kubectl_complete-sveltos_events LICENSE README.md | gzip -n -9 >"$out/$name"
  fi
  rm -rf "$stage"
  echo "wrote $out/$name"
done

# One platform entry per archive of this version in OUT.
platforms=""
for archive in "$out"/kubectl-sveltos_events-v"$version"-*; do
  [[ -e "$archive" ]] || continue
  file=$(basename "$archive")
  rest=${file#kubectl-sveltos_events-v"$version"-}
  os=${rest%%-*}
  arch=${rest#*-}; arch=${arch%%.*}
  bin=kubectl-sveltos_events completer=""
  if [[ "$os" == windows ]]; then
    bin+=.exe
  else
    completer="    - from: kubectl_complete-sveltos_events
      to: .
"
  fi
  sha=$(sha256sum "$archive" | cut -d' ' -f1)
  platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $base_url/$file
    sha256: $sha
    bin: $bin
    files:
    - from: $bin
      to: .
$completer    - from: LICENSE
      to: .
"
done
[[ -n "$platforms" ]] || { echo "release.sh: no archive of v$version in $out" >&2; exit 1; }
manifest="$out/sveltos-events.yaml"
awk -v version="$version" -v platforms="$platforms" '
  /^@PLATFORMS@$/ { printf "%s", platforms; next }
  { gsub(/@VERSION@/, version); print }
' "$here/sveltos-events.yaml.tmpl" >"$manifest"
echo "wrote $manifest"
