'use strict'
// The Node surface against the core's (`laneway::surface::schema::names`): every request
// option, typed field and error kind the core has is in index.d.ts and index.js, and nothing
// else.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const laneway = require('..')

const SCHEMA = laneway._schema()
const DTS = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
const camel = k => k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())

/** The property names an interface of index.d.ts declares. */
function declared (name) {
  const body = DTS.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))
  assert.ok(body, `interface ${name} is in index.d.ts`)
  return [...body[1].matchAll(/^ {2}(\w+)\??:/gm)].map(m => m[1]).sort()
}

test('RequestOptions declares every option of the flat form and no other', () => {
  assert.deepEqual(declared('RequestOptions'), [...SCHEMA.request_options.camel].sort())
})

test('Usage, Timings and Decision declare every key the core sends', () => {
  assert.deepEqual(declared('Usage'), SCHEMA.usage.map(camel).sort())
  assert.deepEqual(declared('Timings'), SCHEMA.timings.map(camel).sort())
  assert.deepEqual(declared('Decision'), SCHEMA.decision.map(camel).sort())
})

test('the ServiceTier type and the Converse serviceTier shape name the core\'s tiers', () => {
  const union = text => [...text.matchAll(/'([a-z_]+)'/g)].map(m => m[1]).sort()
  const tiers = DTS.match(/export type ServiceTier = ([^\n]+)/)
  assert.ok(tiers, 'ServiceTier is in index.d.ts')
  assert.deepEqual(union(tiers[1]), [...SCHEMA.service_tiers].sort())
  const wire = DTS.match(/serviceTier\?: \{ type: ([^}]+)\}/)
  assert.ok(wire, 'the Converse serviceTier shape is in index.d.ts')
  assert.deepEqual(union(wire[1]), [...SCHEMA.service_tier_wire_names].sort())
})

test('every error kind has its own exported class, and only aborted is the binding\'s own', () => {
  const kinds = Object.keys(laneway._KINDS)
  assert.deepEqual(kinds.filter(k => !SCHEMA.error_kinds.includes(k)), ['aborted'])
  for (const kind of SCHEMA.error_kinds) {
    const name = laneway._KINDS[kind]
    assert.equal(name, SCHEMA.error_classes[kind], `${kind} has the core's class name`)
    assert.ok(laneway[name].prototype instanceof laneway.LanewayError, name)
    assert.match(DTS, new RegExp(`export class ${name} extends LanewayError`), `${name} is declared`)
  }
  assert.equal(new Set(Object.values(laneway._KINDS)).size, kinds.length)
})

test('an unknown option names itself and the known ones', () => {
  const router = new laneway.Router({ config: { regions: [{ name: 'us-east-1' }] }, endpointUrl: 'http://127.0.0.1:9', accessKeyId: 'k', secretAccessKey: 's' })
  assert.throws(() => router.plan('hi', { max_tokens: 10 }), e => e instanceof laneway.InvalidRequestError && e.field === 'max_tokens' && e.message.includes('maxTokens'))
})
