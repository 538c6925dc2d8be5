#!/usr/bin/env bash
# Installs what the test suites need and runs every one of them. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says how long the run has taken so far (CONTRIBUTING.md quotes the figures).
started=$SECONDS
phase() { echo "== [$(( (SECONDS - started) / 60 ))m$(( (SECONDS - started) % 60 ))s] $*"; }

# A clean build gains nothing from incremental compilation's records, and writing them costs
# time and disk: CI turns it off.
if [ "${CI:-}" = "true" ]; then
  export CARGO_INCREMENTAL=0
fi

phase "toolchain"
cargo --version
rustc --version

phase "Redis: Debian's redis-server, which the shared-state tests start on loopback"
if ! command -v redis-server >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends redis-server
fi
redis-server --version

phase "Prometheus: Debian's package, unpacked into target/tools (not installed: its install script would start a daemon on :9090)"
# The dashboard and alert-rule tests (cli/tests/observability.rs) run its prometheus and promtool
# on loopback.
prom_dir=target/tools/prometheus
if [ ! -x "$prom_dir/usr/bin/promtool" ]; then
  mkdir -p target/tools/deb
  if ! (cd target/tools/deb && apt-get download prometheus >/dev/null 2>&1); then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    (cd target/tools/deb && apt-get download prometheus)
  fi
  dpkg -x target/tools/deb/prometheus_*.deb "$prom_dir"
  rm -rf target/tools/deb
fi
"$prom_dir/usr/bin/promtool" --version | head -1
export LANEWAY_REQUIRE_PROMETHEUS=1

# mdBook builds the book in docs/ (its Rust snippets run as doctests in `cargo test`). Built
# from crates.io into target/tools, in the background while the Rust suites run; unoptimised,
# since it builds this book in a fraction of a second either way and compiles in half the CPU.
MDBOOK_VERSION=0.5.4
mdbook=target/tools/bin/mdbook
mdbook_log=target/tools/install.log
mkdir -p target/tools
if ! "$mdbook" --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
  CARGO_PROFILE_DEV_DEBUG=false cargo install mdbook --version "$MDBOOK_VERSION" --locked \
    --no-default-features --debug --root target/tools >"$mdbook_log" 2>&1 &
  mdbook_install=$!
fi

# The Python and Node tools come from PyPI and npm, in the background while Rust compiles
# (they wait on the network, not the CPU).
tools_log=target/tools/packages.log
(
  python3 -m venv target/py
  target/py/bin/pip install --quiet --no-compile --upgrade pip
  # boto3: the official Python SDK drives the emulator's batch flow in one test; openai: the
  # official OpenAI SDK checks the emulator's OpenAI-compatible endpoints (and, with anthropic's
  # Bedrock client, Laneway's seams); moto[server]: a
  # third-party implementation of sagemaker-runtime (InvokeEndpoint only) that SageMaker calls
  # are checked on.
  # opentelemetry-sdk: an app's tracer provider, which the span tests install.
  target/py/bin/pip install --quiet --no-compile "maturin>=1.5,<2" "pytest>=8" "pytest-asyncio>=0.23" boto3 \
    "opentelemetry-api>=1.30,<2" "opentelemetry-sdk>=1.30,<2" \
    "mypy>=1.10" "openai>=2" "anthropic>=2" "moto[server]>=5.1,<6"
  # The agent frameworks of the framework matrix, pinned, in their own environment (their
  # `openai` and `boto3` pins are theirs, not the package tests').
  python3 -m venv target/fw
  target/fw/bin/pip install --quiet --no-compile --upgrade pip
  target/fw/bin/pip install --quiet --no-compile -r bindings-python/frameworks/requirements.txt
  # LlamaIndex's pins (openai<3, aioboto3's botocore) conflict with the rest: its own.
  python3 -m venv target/fw-llama
  target/fw-llama/bin/pip install --quiet --no-compile --upgrade pip
  target/fw-llama/bin/pip install --quiet --no-compile -r bindings-python/frameworks/llamaindex/requirements.txt
  cd bindings-node && npm install --omit=optional --no-audit --no-fund
) >"$tools_log" 2>&1 &
tools_install=$!

phase "Rust: format, lint, test build, API docs, tests (workspace; the book's snippets among the doctests)"
cargo fmt --all -- --check
# The lints run inside the test build: clippy-driver compiles the workspace's own crates (what
# `cargo clippy --workspace --all-targets -- -D warnings` checks, the same lints) to the test
# binaries, so the dependencies are compiled once instead of checked for clippy and then built.
# Every cargo command below that reuses the test build runs with the same two variables.
clippy_driver="$(rustc --print sysroot)/bin/clippy-driver"
lint=(env RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
  CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__")
# CLIPPY_ARGS is how cargo-clippy hands its arguments to clippy-driver: a file with two clippy
# lints in it must fail to compile, or a change in that protocol would leave the lints warnings.
printf 'pub fn probe(v: &Vec<u8>) -> bool { v.len() == 0 }\n' >target/tools/lint_probe.rs
if "${lint[@]}" "$clippy_driver" rustc --edition 2024 --crate-type lib --emit=metadata \
  --out-dir target/tools target/tools/lint_probe.rs 2>/dev/null; then
  echo "clippy-driver let a lint through: the lints would not fail the build" >&2
  exit 1
fi
# The targets `cargo test` builds (nextest's own build then finds them fresh), and the benches.
"${lint[@]}" cargo test --workspace --locked --no-run
"${lint[@]}" cargo test --workspace --locked --no-run --benches
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --locked
# cargo-nextest (on this machine kind) runs the test binaries' tests side by side, each in its
# own process; cargo test where it is missing. Doctests (the book's snippets among them) are
# cargo test's.
if cargo nextest --version >/dev/null 2>&1; then
  "${lint[@]}" cargo nextest run --workspace --locked --no-fail-fast
  "${lint[@]}" cargo test --workspace --locked --doc
else
  "${lint[@]}" cargo test --workspace --locked
fi
# The bindings' data types (Python dataclasses, TypeScript declarations, Node's converters) are
# written from the core's schema: stale ones fail here (`cargo run -p laneway-codegen` rewrites).
"${lint[@]}" cargo run --quiet --locked -p laneway-codegen -- --check

phase "Book: docs/ with mdBook"
if [ -n "${mdbook_install:-}" ]; then
  wait "$mdbook_install" || { cat "$mdbook_log"; exit 1; }
fi
"$mdbook" build docs
# Links between the book's pages resolve (a file outside docs/src is named, not linked: the
# built book holds only its own pages).
python3 - <<'PY'
import pathlib, re, sys
src = pathlib.Path("docs/src")
broken = [
    f"{page}: {target}"
    for page in sorted(src.glob("**/*.md"))
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text())
    if not re.match(r"[a-z]+:", target) and not target.startswith("#")
    and not (page.parent / target.split("#")[0]).exists()
]
sys.exit("broken links in the book:\n" + "\n".join(broken) if broken else 0)
PY

phase "Python: the package built from the checkout (dev profile), its tests"
wait "$tools_install" || { cat "$tools_log"; exit 1; }
# The bindings are built unoptimised here, as the Rust suites are: a release build of the
# dependencies is ten minutes of this machine's CPU. scripts/package.sh builds release by
# default, for what ships.
# The venv's maturin builds it (no isolated build environment to make and fill first).
PATH="$PWD/target/py/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
  target/py/bin/pip install --quiet --no-build-isolation ./bindings-python
# The tests start the emulator binary that the Rust suites built (target/debug/laneway-emulator).
target/py/bin/pytest -q bindings-python/tests
# The stubs (_laneway.pyi) against the built module, and the package type-checked with them.
target/py/bin/python -m mypy.stubtest laneway
# The framework matrix: each framework unmodified, on the package built the same way (the
# Rust build above is reused).
PATH="$PWD/target/fw/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
  target/fw/bin/pip install --quiet --no-build-isolation ./bindings-python
target/fw/bin/pytest -q -p no:cacheprovider bindings-python/frameworks --ignore=bindings-python/frameworks/llamaindex
PATH="$PWD/target/fw-llama/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
  target/fw-llama/bin/pip install --quiet --no-build-isolation ./bindings-python
target/fw-llama/bin/pytest -q -p no:cacheprovider bindings-python/frameworks/llamaindex

phase "Node: the package built from the checkout, node:test suite (index.d.ts compiled against real values with tsc)"
node --version
(cd bindings-node && LANEWAY_NODE_PROFILE=debug npm run build && npm test)

phase "Cross-language: the same scenario through Rust, Python and Node (tests/cross_language)"
# With --workspace (and the lint wrapper) the example is the one the test build made: no rebuild.
"${lint[@]}" cargo build --locked --workspace --example cross_language
target/py/bin/python tests/cross_language/compare.py

phase "Packages: the abi3 wheel and the npm packages, installed and called without Rust"
LANEWAY_PACKAGE_PROFILE=dev ./scripts/package.sh
tests/packages/install_without_rust.sh
phase "done"
