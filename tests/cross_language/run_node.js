'use strict'
// The cross-language scenario through the Node binding: prints one JSON line of outcomes.
// Usage: node run_node.js SCENARIO ENDPOINT_URL ACCESS_KEY_ID SECRET_ACCESS_KEY
const fs = require('node:fs')
const laneway = require('../../bindings-node')
const { OpenAI } = require('../../bindings-node/openai')

/** An `openai`-shaped case through `laneway/openai`. */
async function openaiOutcome (shaped, client) {
  const create = shaped.api === 'chat' ? client.chat.completions : client.responses
  try {
    const answer = await create.create(shaped.body)
    if (!shaped.body.stream) return { openai: answer }
    const events = []
    for await (const ev of answer) events.push(ev)
    return { openai_events: events }
  } catch (e) {
    if (e instanceof laneway.LanewayError) return { error: e.details }
    throw e
  }
}

async function outcome (c, router, client) {
  if (c.openai) return openaiOutcome(c.openai, client)
  try {
    if (c.stream) {
      let response
      for await (const ev of router.stream(c.request)) if (ev.type === 'completed') response = ev.response
      return { response: response.toJSON() }
    }
    return { response: (await router.generate(c.request)).toJSON() }
  } catch (e) {
    if (e instanceof laneway.LanewayError) return { error: e.details }
    throw e
  }
}

async function main () {
  const [scenario, endpointUrl, accessKeyId, secretAccessKey] = process.argv.slice(2)
  const s = JSON.parse(fs.readFileSync(scenario, 'utf8'))
  const router = new laneway.Router({ config: s.options.config, endpointUrl, accessKeyId, secretAccessKey })
  const client = new OpenAI({ router })
  const out = []
  for (const c of s.cases) out.push(await outcome(c, router, client))
  console.log(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })
