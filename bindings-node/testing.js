'use strict'
// Starts the loopback emulator (the `laneway-emulator` binary) for tests and examples:
// `$LANEWAY_EMULATOR`, then PATH, then the checkout's target/{debug,release}.
const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')

const ACCESS_KEY_ID = 'LANEWAYTESTKEY'
const SECRET_ACCESS_KEY = 'LANEWAYTESTSECRET'

function findBinary () {
  if (process.env.LANEWAY_EMULATOR) return process.env.LANEWAY_EMULATOR
  try {
    const found = execFileSync('sh', ['-c', 'command -v laneway-emulator'], { encoding: 'utf8' }).trim()
    if (found) return found
  } catch {}
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    for (const profile of ['debug', 'release']) {
      const candidate = path.join(dir, 'target', profile, 'laneway-emulator')
      if (fs.existsSync(candidate)) return candidate
    }
    if (path.dirname(dir) === dir) break
  }
  // In a checkout of Laneway: build it.
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'emulator', 'Cargo.toml'))) {
      execFileSync('cargo', ['build', '--quiet', '-p', 'laneway-emulator'], { cwd: dir, stdio: 'inherit' })
      return path.join(dir, 'target', 'debug', 'laneway-emulator')
    }
    if (path.dirname(dir) === dir) break
  }
  throw new Error('laneway-emulator not found: build it with `cargo build -p laneway-emulator` or set LANEWAY_EMULATOR')
}

/** Starts an emulator; resolves to `{ url, routerOptions(), addFault(), counters(), stop() }`. */
async function startEmulator ({ scenario = 'fast', timeScale } = {}) {
  const args = ['--scenario', scenario, '--port', '0']
  if (timeScale !== undefined) args.push('--time-scale', String(timeScale))
  const child = spawn(findBinary(), args, { stdio: ['ignore', 'pipe', 'inherit'] })
  const url = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout })
    rl.once('line', line => { rl.close(); line.startsWith('http://') ? resolve(line.trim()) : reject(new Error(`the emulator did not start: ${line}`)) })
    child.once('exit', code => reject(new Error(`the emulator exited with ${code}`)))
  })
  return {
    url,
    pid: child.pid,
    routerOptions: () => ({ endpointUrl: url, accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY }),
    addFault: async fault => {
      const r = await fetch(url + '/__laneway/faults', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fault) })
      if (!r.ok) throw new Error(`adding a fault: ${r.status}`)
    },
    counters: async () => (await (await fetch(url + '/__laneway/counters')).json()).counters,
    stop: () => new Promise(resolve => { child.once('exit', resolve); child.kill('SIGINT') })
  }
}

module.exports = { startEmulator, findBinary, ACCESS_KEY_ID, SECRET_ACCESS_KEY }
