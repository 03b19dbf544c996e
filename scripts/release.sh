#!/usr/bin/env bash
# The release tarball: the binary built with `cargo build --release --locked`, its debug info
# stripped (the workspace's release profile keeps line tables for local profiling), with the
# README and the licence files, as
#   target/release-dist/llm-inference-bench-<version>-<target triple>.tar.gz
# and its checksum beside it (<tarball>.sha256, in `sha256sum -c` format).
#
# The binary links the glibc of the machine that builds it, dynamically: it runs on that glibc
# and newer. The script prints the oldest glibc it needs (the highest GLIBC_x.y symbol version
# it references); on Debian 12 (glibc 2.36) that is 2.34, as for any binary linked against
# glibc 2.34 or newer (docs/install.md). Build on an older distribution for an older glibc.
#
# Usage: scripts/release.sh        (about 10 minutes on 2 cores from a cold target/)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=llm-inference-bench
DIST=target/release-dist

fail() { echo "release: $*" >&2; exit 1; }

cargo build --release --locked -p "$BIN"

version="$(cargo metadata --no-deps --format-version 1 --locked \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "'"$BIN"'"))')" \
  || fail "cannot read the crate's version with cargo metadata"
triple="$(rustc -vV | sed -n 's/^host: //p')"
[[ -n "$triple" ]] || fail "cannot read the target triple from rustc -vV"
name="$BIN-$version-$triple"

stage="$DIST/$name"
rm -rf "$stage" "$DIST/$name.tar.gz" "$DIST/$name.tar.gz.sha256"
mkdir -p "$stage"
cp "target/release/$BIN" "$stage/$BIN"
if command -v objcopy >/dev/null 2>&1; then
  objcopy --strip-debug "$stage/$BIN"
else
  echo "release: warning: objcopy not found, the binary keeps its debug info" >&2
fi
cp README.md "$stage/"
shopt -s nullglob
licences=(LICENSE* LICENCE* COPYING*)
shopt -u nullglob
if [[ ${#licences[@]} -eq 0 ]]; then
  echo "release: warning: no LICENSE file in the repository; the licence is only Cargo.toml's" \
    "SPDX expression ($(sed -n 's/^license = "\(.*\)"/\1/p' crates/cli/Cargo.toml))" >&2
else
  cp "${licences[@]}" "$stage/"
fi

"$stage/$BIN" --version >/dev/null || fail "the staged binary does not run"
tar -C "$DIST" -czf "$DIST/$name.tar.gz" "$name"
(cd "$DIST" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
rm -rf "$stage"

glibc="unknown (objdump not found)"
if command -v objdump >/dev/null 2>&1; then
  glibc="$(objdump -T "target/release/$BIN" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -n 1)"
fi
echo "release: $DIST/$name.tar.gz"
echo "release: sha256 $(cut -d' ' -f1 "$DIST/$name.tar.gz.sha256")"
echo "release: needs ${glibc#GLIBC_} or newer of glibc (built against $(ldd --version | head -n 1 | awk '{print $NF}'))"
