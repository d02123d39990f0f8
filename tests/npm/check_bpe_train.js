// libphonegpt's BPE trainer against Hugging Face tokenizers' BpeTrainer (the npm binding's
// native build) on the same text: the merge lists must be equal, merge for merge.
// The npm binding trains only with the model's default trainer (Tokenizer.train(files):
// BpeTrainer::default(), vocab_size 30000, min_frequency 0, no special tokens, the alphabet
// the text has; its JS API has no trainer options), so ours runs with those settings too;
// HF reads files line by line, so ours gets each line (with its '\n') as one text. For each
// pattern (gpt2 = HF's ByteLevel regex; cl100k and o200k as HF Split + ByteLevel, from the
// tokenizer.json libphonegpt writes) on Tiny Shakespeare plus a Unicode text:
//   - the merges are equal over the length both reach (vocab_size counts HF's alphabet of the
//     characters present, ours all 256 bytes, so where the limit is reached ours stops 256 -
//     |alphabet| merges earlier; where pairs run out first both lists must be complete);
//   - ours is the same on 1 and 2 threads (file bytes identical), lines or one whole text;
//   - the tokenizer.json HF trained, loaded by libphonegpt, encodes the text to HF's ids.
// Usage: node check_bpe_train.js BPE_TOOL SHAKESPEARE WORK_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('tokenizers');

const [tool, shakespearePath, work] = process.argv.slice(2);
if (!work) { console.error('usage: node check_bpe_train.js BPE_TOOL SHAKESPEARE WORK_DIR'); process.exit(2); }
fs.mkdirSync(work, { recursive: true });

const unicode = [
  'family 👨‍👩‍👧‍👦 thumbs 👍🏽👍🏿 flags 🇫🇷🇯🇵 combining e\u0301 a\u0308 CJK 漢字かなカナ 한국어 中文测试',
  'RTL שלום עולם مرحبا بالعالم Indic हिन्दी தமிழ் বাংলা NEL\u0085here LS\u2028PS\u2029 NBSP\u00a0word',
  "IT'S HE'LL WE'VE don't it's 123 4567 89012345 foo/bar//baz ...!!! $100,000.00 CamelCase camelCase",
  '\tint main() {\r\n\t\treturn 0;\r\n}\r\n   three spaces  two\n\n',
].join('\n');
const input = path.join(work, 'train_input.txt');
fs.writeFileSync(input, fs.readFileSync(shakespearePath, 'utf8') + unicode.repeat(20));
const text = fs.readFileSync(input, 'utf8');

let failures = 0;
let checks = 0;
function check(ok, what) {
  ++checks;
  if (!ok) ++failures;
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
}
const mergesOf = (file) => JSON.parse(fs.readFileSync(file, 'utf8')).model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));

function trainOurs(pattern, threads, out, lines = true) {
  execFileSync(tool, ['train', pattern, '30000', '0', String(threads), input, out, ...(lines ? ['lines'] : [])],
    { stdio: ['ignore', 'ignore', 'inherit'] });
}

function idsOfOurs(tokenizerJson, name) {
  const out = path.join(work, name + '.ids');
  execFileSync(tool, ['encode', 'hf', tokenizerJson, '-', input, out], { stdio: ['ignore', 'ignore', 'inherit'] });
  const b = fs.readFileSync(out);
  return Array.from(new Int32Array(b.buffer, b.byteOffset, b.length / 4));
}

async function main() {
  for (const pattern of ['gpt2', 'cl100k', 'o200k']) {
    const ours1 = path.join(work, `ours_${pattern}_1.json`);
    const ours2 = path.join(work, `ours_${pattern}_2.json`);
    trainOurs(pattern, 1, ours1);
    trainOurs(pattern, 2, ours2);
    check(fs.readFileSync(ours1).equals(fs.readFileSync(ours2)), `${pattern}: ours on 1 and 2 threads writes the same tokenizer.json`);
    // The whole file as one text: the counting threads cut it (at places no piece crosses).
    const whole1 = path.join(work, `ours_${pattern}_whole_1.json`);
    const whole2 = path.join(work, `ours_${pattern}_whole_2.json`);
    trainOurs(pattern, 1, whole1, false);
    trainOurs(pattern, 2, whole2, false);
    check(fs.readFileSync(whole1).equals(fs.readFileSync(whole2)), `${pattern}: one text on 1 and 2 threads, the same tokenizer.json`);

    // HF with the same pre-tokenizer, an empty BPE model, its default trainer.
    const spec = JSON.parse(fs.readFileSync(ours1, 'utf8'));
    spec.model.vocab = {};
    spec.model.merges = [];
    const tok = hf.Tokenizer.fromString(JSON.stringify(spec));
    const t0 = Date.now();
    tok.train([input]);
    const hfFile = path.join(work, `hf_${pattern}.json`);
    tok.save(hfFile);
    const hfMerges = mergesOf(hfFile);
    const ourMerges = mergesOf(ours1);
    const n = Math.min(hfMerges.length, ourMerges.length);
    let first = -1;
    for (let i = 0; i < n && first < 0; ++i) if (hfMerges[i] !== ourMerges[i]) first = i;
    const alphabet = tok.getVocabSize() - hfMerges.length;
    const hfReachedLimit = tok.getVocabSize() >= 30000;
    check(first < 0 && n > 1000, `${pattern}: merges identical over ${n} (HF ${hfMerges.length} in ${Date.now() - t0} ms, ours ${ourMerges.length})` +
      (first >= 0 ? `; first difference at ${first}: HF "${hfMerges[first]}", ours "${ourMerges[first]}"` : ''));
    if (!hfReachedLimit) {
      check(hfMerges.length === ourMerges.length, `${pattern}: pairs ran out before the limit, so both lists are complete (${hfMerges.length} vs ${ourMerges.length})`);
    } else {
      check(ourMerges.length === 30000 - 256 && hfMerges.length === 30000 - alphabet,
        `${pattern}: at the limit ours has 30000 - 256 merges, HF 30000 - ${alphabet} (its alphabet)`);
    }

    const hfIds = (await tok.encode(text)).getIds();
    const ourIds = idsOfOurs(hfFile, `hf_${pattern}`);
    check(hfIds.length === ourIds.length && hfIds.every((v, i) => v === ourIds[i]),
      `${pattern}: HF's trained tokenizer.json loaded by libphonegpt: ${ourIds.length} ids equal to HF's ${hfIds.length}`);
  }
  console.log(`${checks - failures} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(1); });
