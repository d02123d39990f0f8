// The peers of bench_tokenizer on the same files: npm tiktoken (encode_ordinary) and Hugging
// Face tokenizers (the tokenizer.json libphonegpt writes for the same ranks; one string, so
// one thread), one-thread encode MB/s, best of 3, plus their load times.
// Usage: node bench_tokenizer_peers.js RANKS_DIR TOKENIZER_JSON_DIR TEXT_FILE [REPS]
//   (TOKENIZER_JSON_DIR holds NAME.tokenizer.json, e.g. build/tests/tmp/bpe_exact)
'use strict';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
const npm = path.join(__dirname, '..', 'tests', 'npm', 'node_modules');
const { get_encoding } = require(path.join(npm, 'tiktoken'));
const hf = require(path.join(npm, 'tokenizers'));

async function main() {
  const [, jsonDir, textFile, repsArg] = process.argv.slice(2);
  const reps = Math.max(1, Number(repsArg || 3));
  const text = fs.readFileSync(textFile, 'utf8');
  const mb = Buffer.byteLength(text) / 1e6;
  const best = async (f) => { let b = 1e30; for (let i = 0; i < reps; ++i) { const t = process.hrtime.bigint(); await f(); b = Math.min(b, Number(process.hrtime.bigint() - t) / 1e9); } return b; };
  const rows = [];
  for (const name of ['gpt2', 'cl100k_base', 'o200k_base']) {
    let t = process.hrtime.bigint();
    const enc = get_encoding(name);
    const tkLoad = Number(process.hrtime.bigint() - t) / 1e6;
    let n = 0;
    const tk = await best(() => { n = enc.encode_ordinary(text).length; });
    t = process.hrtime.bigint();
    const tok = hf.Tokenizer.fromFile(path.join(jsonDir, name + '.tokenizer.json'));
    const hfLoad = Number(process.hrtime.bigint() - t) / 1e6;
    let m = 0;
    const h = await best(async () => { m = (await tok.encode(text, null, { addSpecialTokens: false })).getIds().length; });
    rows.push({ encoding: name, tiktoken_load_ms: +tkLoad.toFixed(1), tiktoken_mb_s: +(mb / tk).toFixed(2), tiktoken_tokens: n,
                hf_load_ms: +hfLoad.toFixed(1), hf_mb_s: +(mb / h).toFixed(2), hf_tokens: m });
  }
  console.log(JSON.stringify(rows));
}
main().catch((e) => { console.error(e); process.exit(1); });
