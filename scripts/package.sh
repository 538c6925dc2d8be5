#!/usr/bin/env bash
# Builds the installable artifacts into target/dist: the Python package as an abi3 wheel
# (CPython 3.9+, maturin) and the Node package in napi-rs's layout (the main package, and the
# linux-x64-gnu package holding the prebuilt addon). Neither needs Rust to install.
#
# LANEWAY_PACKAGE_PROFILE picks the cargo profile: release (the default, what ships) or dev
# (what scripts/test.sh uses: the same packages, unoptimised, built in a minute rather than ten).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${LANEWAY_PACKAGE_PROFILE:-release}
case "$profile" in
  release) profile_dir=release ;;
  dev) profile_dir=debug ;;
  *) echo "LANEWAY_PACKAGE_PROFILE must be release or dev, not '$profile'" >&2; exit 2 ;;
esac
dist=target/dist
rm -rf "$dist" && mkdir -p "$dist"

echo "== Python: abi3 wheel ($profile profile)"
python3 -m venv target/py
target/py/bin/pip install --quiet "maturin>=1.5,<2"
# The venv's interpreter, as `pip install` builds with: cargo then reuses that build.
target/py/bin/maturin build --profile "$profile" --locked --interpreter "$PWD/target/py/bin/python3" \
  --manifest-path bindings-python/Cargo.toml --out "$dist"

echo "== Node: the main package and the linux-x64-gnu addon package ($profile profile)"
cargo build --profile "$profile" --locked -p laneway-node
platform=bindings-node/npm/linux-x64-gnu
cp "${CARGO_TARGET_DIR:-target}/$profile_dir/liblaneway_node.so" "$platform/laneway.linux-x64-gnu.node"
(cd "$platform" && npm pack --silent --pack-destination "../../../$dist" >/dev/null)
(cd bindings-node && npm pack --silent --pack-destination "../$dist" >/dev/null)
ls -l "$dist"
