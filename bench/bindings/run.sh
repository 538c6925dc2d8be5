#!/usr/bin/env bash
# The bindings benchmark: Laneway's Python binding against boto3 (and its openai-shaped client
# against the openai SDK) and its Node binding against the AWS SDK for JavaScript, each client pinned to one core, the emulator (release build) to
# another. Installs what it needs; figures go to stdout (and into BENCHMARKS.md by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -p laneway-emulator
# The floor: the official Rust SDK alone, which the Python rows are also measured against.
cargo build --release --locked -p laneway --example raw_sdk_floor
python3 -m venv target/py
target/py/bin/pip install --quiet "maturin>=1.5,<2" boto3 "openai>=2" ./bindings-python
target/py/bin/python bench/bindings/python_vs_boto3.py
# The openai-shaped client against the openai SDK on the emulator's OpenAI-compatible endpoint.
target/py/bin/python bench/bindings/python_vs_openai.py
# The seams (laneway.boto3, laneway.openai.client) under the official SDKs, against the SDKs
# calling the emulator directly.
target/py/bin/python bench/bindings/python_seams.py
(cd bindings-node && npm install --omit=optional --no-audit --no-fund --silent && npm run build)
(cd bench/bindings && npm install --omit=optional --no-audit --no-fund --silent)
taskset -c 0 node bench/bindings/node_vs_sdk.js
# The Node seams (laneway.requestHandler, laneway.fetch) under the official SDKs. Both seam
# benches measure a LiteLLM proxy too when LANEWAY_LITELLM names its executable
# (python3 -m venv target/litellm && target/litellm/bin/pip install 'litellm[proxy]').
taskset -c 0 node bench/bindings/node_seams.js
