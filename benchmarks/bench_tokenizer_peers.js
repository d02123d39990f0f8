// The peers of bench_tokenizer on the same files: npm tiktoken (encode_ordinary) and Hugging
// Face tokenizers (the tokenizer.json libphonegpt writes for the same ranks; one string, so
// one thread): one-thread encode MB/s by wall time and by process CPU time (user + system of
// the whole node process, so it also counts node's own helper threads), best of REPS, plus
// their load times and the resident memory a load added.
// Usage: node bench_tokenizer_peers.js RANKS_DIR TOKENIZER_JSON_DIR TEXT_FILE [REPS] [ENCODING]
//   (TOKENIZER_JSON_DIR holds NAME.tokenizer.json, e.g. build/tests/tmp/bpe_exact; ENCODING:
//   gpt2, cl100k_base or o200k_base alone)
'use strict';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
const npm = path.join(__dirname, '..', 'tests', 'npm', 'node_modules');
const { get_encoding } = require(path.join(npm, 'tiktoken'));
const hf = require(path.join(npm, 'tokenizers'));

const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const wallSeconds = () => Number(process.hrtime.bigint()) / 1e9;

// Best wall and best CPU seconds of `reps` calls of f.
async function best(reps, f) {
  let wall = 1e30, cpu = 1e30;
  for (let i = 0; i < reps; ++i) {
    const w = wallSeconds(), c = cpuSeconds();
    await f();
    wall = Math.min(wall, wallSeconds() - w);
    cpu = Math.min(cpu, cpuSeconds() - c);
  }
  return { wall, cpu };
}

// Wall ms, CPU ms and the resident KiB added by a load.
function load(f) {
  if (global.gc) global.gc();
  const rss = process.memoryUsage().rss, w = wallSeconds(), c = cpuSeconds();
  const value = f();
  return { value, ms: (wallSeconds() - w) * 1e3, cpu_ms: (cpuSeconds() - c) * 1e3,
           rss_kib: Math.round((process.memoryUsage().rss - rss) / 1024) };
}

async function main() {
  const [, jsonDir, textFile, repsArg, only] = process.argv.slice(2);
  const reps = Math.max(1, Number(repsArg || 3));
  const text = fs.readFileSync(textFile, 'utf8');
  const mb = Buffer.byteLength(text) / 1e6;
  const rows = [];
  for (const name of ['gpt2', 'cl100k_base', 'o200k_base']) {
    if (only && only !== name) continue;
    const tk = load(() => get_encoding(name));
    let n = 0;
    const tkRun = await best(reps, () => { n = tk.value.encode_ordinary(text).length; });
    const h = load(() => hf.Tokenizer.fromFile(path.join(jsonDir, name + '.tokenizer.json')));
    let m = 0;
    const hRun = await best(reps, async () => {
      m = (await h.value.encode(text, null, { addSpecialTokens: false })).getIds().length;
    });
    rows.push({ encoding: name,
                tiktoken_load_ms: +tk.ms.toFixed(1), tiktoken_load_cpu_ms: +tk.cpu_ms.toFixed(1),
                tiktoken_rss_kib: tk.rss_kib, tiktoken_mb_s: +(mb / tkRun.wall).toFixed(2),
                tiktoken_cpu_mb_s: +(mb / tkRun.cpu).toFixed(2), tiktoken_tokens: n,
                hf_load_ms: +h.ms.toFixed(1), hf_load_cpu_ms: +h.cpu_ms.toFixed(1), hf_rss_kib: h.rss_kib,
                hf_mb_s: +(mb / hRun.wall).toFixed(2), hf_cpu_mb_s: +(mb / hRun.cpu).toFixed(2), hf_tokens: m });
    tk.value.free();
  }
  console.log(JSON.stringify(rows));
}
main().catch((e) => { console.error(e); process.exit(1); });
