#!/usr/bin/env bash
# Installs what the test suites need and runs every one of them. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
cargo --version
rustc --version

echo "== Redis: Debian's redis-server, which the shared-state tests start on loopback"
if ! command -v redis-server >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends redis-server
fi
redis-server --version

echo "== Rust: build, lint, test (workspace)"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked

echo "== Python: venv with maturin and pytest, the package built from the checkout, its tests"
python3 -m venv target/py
target/py/bin/pip install --quiet --upgrade pip
# boto3: the official Python SDK drives the emulator's batch flow in one test; openai: the official
# OpenAI SDK checks the emulator's OpenAI-compatible endpoints; moto[server]: a third-party
# implementation of sagemaker-runtime (InvokeEndpoint only) that SageMaker calls are checked on.
target/py/bin/pip install --quiet "maturin>=1.5,<2" "pytest>=8" "pytest-asyncio>=0.23" boto3 "mypy>=1.10" "openai>=2" "moto[server]>=5.1,<6"
target/py/bin/pip install --quiet ./bindings-python
# The tests start the emulator binary that `cargo test` built (target/debug/laneway-emulator).
cargo build --locked -p laneway-emulator
target/py/bin/pytest -q bindings-python/tests
# The stubs (_laneway.pyi) against the built module, and the package type-checked with them.
target/py/bin/python -m mypy.stubtest laneway

echo "== Node: the package built from the checkout, node:test suite (index.d.ts compiled against real values with tsc)"
node --version
(cd bindings-node && npm install --omit=optional --no-audit --no-fund && npm run build && npm test)

echo "== Cross-language: the same scenario through Rust, Python and Node (tests/cross_language)"
cargo build --locked -p laneway --example cross_language
target/py/bin/python tests/cross_language/compare.py

echo "== Packages: the abi3 wheel and the npm packages, installed and called without Rust"
./scripts/package.sh
tests/packages/install_without_rust.sh
