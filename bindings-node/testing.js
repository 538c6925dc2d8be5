'use strict'
// Starts the loopback emulator (the `laneway-emulator` binary) for tests and examples:
// `$LANEWAY_EMULATOR`, then PATH, then the checkout's target/{debug,release}.
const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')

const ACCESS_KEY_ID = 'LANEWAYTESTKEY'
const SECRET_ACCESS_KEY = 'LANEWAYTESTSECRET'

/** A short-term Bedrock API key, made as AWS's token generators make one: a SigV4-presigned
 * `CallWithBearerToken` URL, base64, after `bedrock-api-key-`. */
function bedrockApiKey (accessKeyId, secretAccessKey, region, expiresS = 43200) {
  const crypto = require('node:crypto')
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = amzDate.slice(0, 8)
  const scope = `${day}/${region}/bedrock/aws4_request`
  const params = {
    Action: 'CallWithBearerToken',
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${accessKeyId}/${scope}`,
    'X-Amz-Date': amzDate,
    'X-Amz-Expires': String(expiresS),
    'X-Amz-SignedHeaders': 'host'
  }
  const query = Object.keys(params).sort().map(k => `${encodeURIComponent(k)}=${encodeURIComponent(params[k])}`).join('&')
  const sha = x => crypto.createHash('sha256').update(x).digest('hex')
  const canonical = `POST\n/\n${query}\nhost:bedrock.amazonaws.com\n\nhost\n${sha('')}`
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha(canonical)}`
  let key = Buffer.from('AWS4' + secretAccessKey)
  for (const part of [day, region, 'bedrock', 'aws4_request']) key = crypto.createHmac('sha256', key).update(part).digest()
  const signature = crypto.createHmac('sha256', key).update(toSign).digest('hex')
  return 'bedrock-api-key-' + Buffer.from(`bedrock.amazonaws.com/?${query}&X-Amz-Signature=${signature}&Version=1`).toString('base64')
}

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

/** Starts an emulator; resolves to `{ url, routerOptions(), bedrockApiKey(), addFault(), clearFaults(), counters(), stop() }`. */
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
    /** A Bedrock API key for the emulator's test credentials: `apiKey` of an `openai` client at `${url}/openai/v1`. */
    bedrockApiKey: (region = 'us-east-1') => bedrockApiKey(ACCESS_KEY_ID, SECRET_ACCESS_KEY, region),
    addFault: async fault => {
      const r = await fetch(url + '/__laneway/faults', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fault) })
      if (!r.ok) throw new Error(`adding a fault: ${r.status}`)
    },
    clearFaults: async () => {
      const r = await fetch(url + '/__laneway/faults', { method: 'DELETE' })
      if (!r.ok) throw new Error(`clearing faults: ${r.status}`)
    },
    counters: async () => (await (await fetch(url + '/__laneway/counters')).json()).counters,
    stop: () => new Promise(resolve => { child.once('exit', resolve); child.kill('SIGINT') })
  }
}

module.exports = { startEmulator, findBinary, bedrockApiKey, ACCESS_KEY_ID, SECRET_ACCESS_KEY }
