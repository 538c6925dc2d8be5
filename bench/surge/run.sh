#!/usr/bin/env bash
# The surge benchmark (issue 45): bursts of 2,000 short calls on the emulator's `startup`
# scenario at 128 to 1,024 in flight, from Python (beside boto3's standard and adaptive retry
# modes) and from Node (beside the AWS SDK for JavaScript's), each row on a fresh emulator.
# Installs what it needs; figures go to stdout (and into RELIABILITY.md by hand).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked -p laneway-emulator
export LANEWAY_EMULATOR="$PWD/target/release/laneway-emulator"
python3 -m venv target/py
target/py/bin/pip install --quiet "maturin>=1.5,<2" boto3 ./bindings-python
target/py/bin/python bench/surge/surge.py
(cd bindings-node && npm install --omit=optional --no-audit --no-fund --silent && npm run build)
(cd bench/bindings && npm install --omit=optional --no-audit --no-fund --silent)
NODE_PATH="$PWD/bench/bindings/node_modules" node bench/surge/surge.js
