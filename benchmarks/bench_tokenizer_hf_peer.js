// HF tokenizers (npm) on a model's own tokenizer.json: the peer of bench_tokenizer --hf. Load
// time (wall and CPU) and the resident memory the load added, and one-thread encode MB/s by wall and by process CPU time, best of REPS, of the whole
// text as one string (add_special_tokens false, as libphonegpt's encode).
// Usage: node bench_tokenizer_hf_peer.js TEXT_FILE REPS NAME=TOKENIZER_JSON...
'use strict';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', 'tests', 'npm', 'node_modules', 'tokenizers'));

const cpuSeconds = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const wallSeconds = () => Number(process.hrtime.bigint()) / 1e9;

async function main() {
  const [textPath, repsArg, ...specs] = process.argv.slice(2);
  if (!specs.length) { console.error('usage: node bench_tokenizer_hf_peer.js TEXT_FILE REPS NAME=TOKENIZER_JSON...'); process.exit(2); }
  const text = fs.readFileSync(textPath, 'utf8');
  const mb = Buffer.byteLength(text) / 1e6;
  const reps = Math.max(1, Number(repsArg));
  const rows = [];
  for (const spec of specs) {
    const [name, file] = spec.split('=');
    const rss0 = process.memoryUsage().rss, w0 = wallSeconds(), c0 = cpuSeconds();
    const tok = hf.Tokenizer.fromFile(file);
    const loadMs = (wallSeconds() - w0) * 1e3, loadCpuMs = (cpuSeconds() - c0) * 1e3;
    const rssKib = Math.round((process.memoryUsage().rss - rss0) / 1024);
    let wall = 1e30, cpu = 1e30, tokens = 0;
    for (let i = 0; i < reps; ++i) {
      const w = wallSeconds(), c = cpuSeconds();
      tokens = (await tok.encode(text, null, { addSpecialTokens: false })).getIds().length;
      wall = Math.min(wall, wallSeconds() - w);
      cpu = Math.min(cpu, cpuSeconds() - c);
    }
    rows.push({ encoding: name, load_ms: loadMs, load_cpu_ms: loadCpuMs, rss_kib: rssKib, tokens, encode_mb_s: mb / wall, encode_cpu_mb_s: mb / cpu });
  }
  console.log(JSON.stringify(rows));
}
main().catch((e) => { console.error(e); process.exit(1); });
