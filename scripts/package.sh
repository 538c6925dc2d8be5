#!/usr/bin/env bash
# Builds the installable artifacts into target/dist: the Python package as an abi3 wheel
# (CPython 3.9+, maturin) and the Node package in napi-rs's layout (the main package, and the
# linux-x64-gnu package holding the prebuilt addon). Neither needs Rust to install.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=target/dist
rm -rf "$dist" && mkdir -p "$dist"

echo "== Python: abi3 wheel"
python3 -m venv target/py
target/py/bin/pip install --quiet "maturin>=1.5,<2"
target/py/bin/maturin build --release --locked --manifest-path bindings-python/Cargo.toml --out "$dist"

echo "== Node: the main package and the linux-x64-gnu addon package"
cargo build --release --locked -p laneway-node
platform=bindings-node/npm/linux-x64-gnu
cp "${CARGO_TARGET_DIR:-target}/release/liblaneway_node.so" "$platform/laneway.linux-x64-gnu.node"
(cd "$platform" && npm pack --silent --pack-destination "../../../$dist" >/dev/null)
(cd bindings-node && npm pack --silent --pack-destination "../$dist" >/dev/null)
ls -l "$dist"
