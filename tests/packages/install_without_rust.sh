#!/usr/bin/env bash
# Installs the artifacts of scripts/package.sh as a user without Rust would: a fresh venv and a
# fresh npm folder, with no `cargo` or `rustc` on PATH and npm offline, then makes a call from
# each against the emulator. Run after scripts/package.sh (scripts/test.sh runs both).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
dist=$root/target/dist
work=$root/target/pkgtest
rm -rf "$work" && mkdir -p "$work"
emulator=${LANEWAY_EMULATOR:-$root/target/debug/laneway-emulator}
test -x "$emulator" || { echo "build the emulator first: cargo build -p laneway-emulator" >&2; exit 1; }

# PATH without any directory that holds cargo or rustc.
path=""
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [[ -x "$d/cargo" || -x "$d/rustc" ]] && continue
  path="${path:+$path:}$d"
done
python=$(command -v python3)
python=$(readlink -f "$(PATH=$PATH "$python" -c 'import sys; print(sys.executable)')")

echo "== Python: the wheel into a fresh venv, no Rust on PATH"
env PATH="$path" "$python" -m venv "$work/venv"
env PATH="$path" "$work/venv/bin/pip" install --quiet --no-index "$dist"/laneway-*.whl
env PATH="$path" LANEWAY_EMULATOR="$emulator" "$work/venv/bin/python" - <<'PY'
import shutil
import laneway
from laneway.testing import Emulator
assert shutil.which("cargo") is None and shutil.which("rustc") is None, "Rust is on PATH"
with Emulator(scenario="fast") as emu:
    r = laneway.Router(**emu.router_kwargs()).generate_sync("Hello from a wheel", family="nova", max_tokens=8)
    assert r.text and r.cost_usd > 0, r
    print(f"  python: {laneway.__file__}: {r.decision.model} in {r.decision.region}, {r.usage.output_tokens} tokens")
    # The openai-shaped client, without the openai package: Laneway's own errors and views.
    from laneway.openai import OpenAI
    c = OpenAI(**emu.router_kwargs()).chat.completions.create(model="openai.gpt-5.6-terra", messages=[{"role": "user", "content": "Hi"}], max_tokens=8)
    assert c.choices[0].message.content and c.laneway.cost_usd > 0, c
    print(f"  python: laneway.openai: {c.object} from {c.laneway.decision.provider}")
PY

echo "== Node: the packed packages into a fresh folder, offline, no Rust on PATH"
mkdir -p "$work/app"
cd "$work/app"
echo '{ "name": "laneway-install-test", "private": true }' > package.json
env PATH="$path" npm install --offline --no-audit --no-fund --silent "$dist"/laneway-linux-x64-gnu-*.tgz "$dist"/laneway-0*.tgz
test ! -e node_modules/laneway/laneway.node || { echo "the main package carries a source build" >&2; exit 1; }
env PATH="$path" LANEWAY_EMULATOR="$emulator" node - <<'JS'
const { execSync } = require('node:child_process')
for (const tool of ['cargo', 'rustc']) {
  let found = true
  try { execSync(`command -v ${tool}`, { stdio: 'ignore', shell: '/bin/sh' }) } catch { found = false }
  if (found) throw new Error(`${tool} is on PATH`)
}
const laneway = require('laneway')
const { startEmulator } = require('laneway/testing')
;(async () => {
  const emu = await startEmulator({ scenario: 'fast' })
  try {
    const r = await new laneway.Router(emu.routerOptions()).generate('Hello from npm', { family: 'nova', maxTokens: 8 })
    if (!r.text || !(r.costUsd > 0)) throw new Error('no answer')
    console.log(`  node: ${require.resolve('laneway-linux-x64-gnu')}: ${r.decision.model} in ${r.decision.region}, ${r.usage.outputTokens} tokens`)
    // The openai-shaped client, without the openai package.
    const { OpenAI } = require('laneway/openai')
    const c = await new OpenAI(emu.routerOptions()).chat.completions.create({ model: 'openai.gpt-5.6-terra', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8 })
    if (!c.choices[0].message.content || !(c.laneway.cost_usd > 0)) throw new Error('no openai-shaped answer')
    console.log(`  node: laneway/openai: ${c.object} from ${c.laneway.decision.provider}`)
  } finally { await emu.stop() }
})().catch(e => { console.error(e); process.exit(1) })
JS
echo "installed and called without Rust: Python wheel and npm packages"
