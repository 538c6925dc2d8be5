// Builds the native addon from the checkout: `cargo build -p laneway-node`, then copies the
// library next to this file as laneway.node. LANEWAY_NODE_PROFILE=debug builds faster.
'use strict'
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const here = __dirname
const root = path.resolve(here, '..')
const profile = process.env.LANEWAY_NODE_PROFILE === 'debug' ? 'debug' : 'release'
const args = ['build', '-p', 'laneway-node', '--locked']
if (profile === 'release') args.push('--release')
execFileSync('cargo', args, { cwd: root, stdio: 'inherit' })
const targetDir = process.env.CARGO_TARGET_DIR || path.join(root, 'target')
const names = { linux: 'liblaneway_node.so', darwin: 'liblaneway_node.dylib', win32: 'laneway_node.dll' }
const lib = path.join(targetDir, profile, names[process.platform] || names.linux)
fs.copyFileSync(lib, path.join(here, 'laneway.node'))
console.log(`laneway: built ${path.join(here, 'laneway.node')} (${profile})`)
