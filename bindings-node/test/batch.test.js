'use strict'
// The batch lane from Node against the emulator's S3 and batch jobs: the same cases as the
// Python suite (a session, progress, results in order, a handle resumed from JSON, cancelling,
// small submissions on flex, a progress callback that throws).
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const laneway = require('..')
const { startEmulator } = require('../testing')

const BATCH = { batch: { bucket: 'lw-batch', role_arn: 'arn:aws:iam::123456789012:role/laneway-batch', max_records_per_job: 120, poll_interval: 20.0 } }
// Request i asks with i % 20 + 1 filler words: its input size identifies it.
const prompt = i => 'summarise: ' + 'note '.repeat(i % 20 + 1)
const request = (i, maxTokens = 8) => ({ prompt: prompt(i), model: 'amazon.nova-lite-v1:0', maxTokens, slo: 'batch' })

let emu, router
before(async () => {
  emu = await startEmulator({ scenario: 'fast' })
  router = new laneway.Router({ config: BATCH, ...emu.routerOptions() })
})
after(async () => { await emu.stop() })

test('a session waits with progress and reads results in order', async () => {
  const session = router.batchSession()
  for (let i = 0; i < 250; i++) assert.equal(session.push(request(i, 12)), i)
  assert.equal(session.length, 250)
  const handle = await session.submit()
  assert.ok(handle instanceof laneway.BatchHandle)
  // 120 records a job at most, 100 at least: two full jobs, the 10 left over on flex.
  assert.equal(handle.jobArns.length, 2)
  const seen = []
  const status = await router.waitBatch(handle, s => seen.push(s))
  assert.ok(status.finished && status.done === 2 && status.total === 2)
  assert.ok(seen.length > 0 && seen.at(-1).done === 2)
  const items = await router.batchResults(handle)
  assert.equal(items.length, 250)
  const outputs = items.map(item => item.output)
  assert.deepEqual(outputs.map(o => o.lane), [...Array(240).fill('batch'), ...Array(10).fill('flex')])
  assert.ok(outputs.slice(240).every(o => o.diverted.includes('left over')))
  assert.ok(outputs.every(o => o.text && o.usage.outputTokens > 0 && o.usage.outputTokens <= 12 && o.costUsd > 0))
  for (let i = 20; i < 250; i++) assert.equal(outputs[i].usage.inputTokens, outputs[i - 20].usage.inputTokens)
  assert.ok(outputs[19].usage.inputTokens > outputs[0].usage.inputTokens)
  assert.throws(() => session.push(request(0)), laneway.InvalidRequestError)
})

test('a handle resumes from JSON in another router', async () => {
  const handle = await router.submitBatch(Array.from({ length: 120 }, (_, i) => request(i)))
  const text = JSON.stringify(handle)
  assert.ok(JSON.parse(text).jobs.length === 1)
  const other = new laneway.Router({ config: BATCH, ...emu.routerOptions() })
  const resumed = laneway.BatchHandle.fromJSON(text)
  assert.deepEqual(resumed.jobArns, handle.jobArns)
  await other.waitBatch(resumed)
  assert.ok((await other.batchStatus(resumed)).finished)
  const items = await other.batchResults(resumed)
  assert.ok(items.length === 120 && items.every(item => item.output))
  assert.throws(() => laneway.BatchHandle.fromJSON('{not json'), laneway.ConfigError)
})

test('a small batch is answered on flex and says why', async () => {
  const handle = await router.submitBatch([0, 1, 2].map(i => request(i)))
  assert.deepEqual(handle.jobArns, [])
  const items = await router.batchResults(handle)
  assert.deepEqual(items.map(item => item.output.lane), ['flex', 'flex', 'flex'])
  assert.ok(items.every(item => item.output.diverted))
})

test('a batch is cancelled', async () => {
  const handle = await router.submitBatch(Array.from({ length: 110 }, (_, i) => request(i)))
  const stopped = await router.cancelBatch(handle)
  const status = await router.waitBatch(handle)
  assert.ok(status.finished)
  // A job that ended on its own before the stop is not counted.
  assert.equal(stopped, status.jobs.filter(job => job.status === 'Stopped').length)
})

test('an exception in the progress callback ends the wait with it', async () => {
  const handle = await router.submitBatch(Array.from({ length: 100 }, (_, i) => request(i)))
  class Stop extends Error {}
  await assert.rejects(router.waitBatch(handle, () => { throw new Stop('enough') }), Stop)
  const controller = new AbortController()
  controller.abort()
  await assert.rejects(router.waitBatch(handle, null, { signal: controller.signal }), { name: 'AbortError' })
})

test('batch requests need the batch class, the section, and a handle', async () => {
  assert.throws(() => router.batchSession().push({ prompt: 'x', model: 'amazon.nova-lite-v1:0' }), /slo.class/)
  const plain = new laneway.Router(emu.routerOptions())
  await assert.rejects(plain.submitBatch([request(0)]), laneway.ConfigError)
  await assert.rejects(router.batchStatus({ jobs: [] }), TypeError)
})
