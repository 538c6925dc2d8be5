#!/usr/bin/env bash
# Installs what the test suites need and runs every one of them. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
cargo --version
rustc --version

echo "== Rust: build, lint, test (workspace)"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
