'use strict'
// Regenerates the expected ids of this directory with tiktoken (npm `tiktoken` 1.0.22, WASM build of OpenAI's Rust
// core). Run once; the outputs are committed. Usage:
//   NODE_PATH=/tmp/lmkit-peers/node_modules node generate_expected.js
// (the peers directory comes from `../shared/bench/peers.sh setup`). All special tokens of each encoding are allowed.
const fs = require('fs')
const { get_encoding } = require('tiktoken')
const jobs = [
  ['corpus.en', ['gpt2']],
  ['tinystories_sample.txt', ['gpt2', 'cl100k_base', 'o200k_base']],
  ['patterns.txt', ['gpt2', 'cl100k_base', 'o200k_base']],
]
const version = JSON.parse(fs.readFileSync((process.env.NODE_PATH || '/tmp/lmkit-peers/node_modules') + '/tiktoken/package.json', 'utf8')).version
for (const [file, encs] of jobs) {
  const text = fs.readFileSync(__dirname + '/' + file, 'utf8')
  for (const name of encs) {
    const enc = get_encoding(name)
    const ids = Array.from(enc.encode(text, 'all'))
    enc.free()
    const out = `${__dirname}/${file.replace(/\.[a-z]+$/, '')}.${name}.json`
    fs.writeFileSync(out, JSON.stringify({ source: file, encoding: name, generator: 'tiktoken ' + version, tokens: ids.length, ids }) + '\n')
    console.log(out, ids.length)
  }
}
