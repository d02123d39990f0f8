// Exactness of libphonegpt's byte-level BPE against the real peers, on Tiny Shakespeare and on
// a Unicode torture text written here: token ids must be identical, id for id.
//   - npm tiktoken (OpenAI's Rust crate as WASM): gpt2, cl100k_base, o200k_base loaded by
//     libphonegpt from the same .tiktoken rank files (encode_ordinary on both sides);
//   - Hugging Face tokenizers (native binding): the tokenizer.json libphonegpt writes for each
//     of those, loaded by both; GPT-2's own encoder.json + vocab.bpe as an HF BPE model;
//   - special tokens recognised when asked: tiktoken's encode with allowed "all".
// libphonegpt is driven through tests/bpe/bpe_tool (the C API); decode(encode(x)) == x is
// checked there too.
// Usage: node check_bpe_exact.js BPE_TOOL PEER_FILES_DIR SHAKESPEARE WORK_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { get_encoding } = require('tiktoken');
const hf = require('tokenizers');

const [tool, peers, shakespearePath, work] = process.argv.slice(2);
if (!work) { console.error('usage: node check_bpe_exact.js BPE_TOOL PEER_FILES_DIR SHAKESPEARE WORK_DIR'); process.exit(2); }
fs.mkdirSync(work, { recursive: true });

function tortureText() {
  const digits = [];
  for (let n = 1; n <= 24; ++n) digits.push('1234567890'.repeat(3).slice(0, n));
  const parts = [
    'family 👨‍👩‍👧‍👦 thumbs 👍🏽👍🏿 rainbow 🏳️‍🌈 flags 🇫🇷🇯🇵🇺🇸 keycap 1️⃣ 🤷🏽‍♀️',
    'combining: e\u0301 a\u0308 n\u0303o Z\u0351\u0352\u0353 a\u0301\u0301b \u0301start',
    'CJK: 漢字かなカナ 한국어 中文测试，標點。「引號」',
    'RTL: שלום עולם مرحبا بالعالم ‏mark‎',
    'Indic: हिन्दी தமிழ் বাংলা ગુજરાતી ไทย',
    'separators: NEL\u0085here LS\u2028PS\u2029 NBSP\u00a0word ideographic\u3000space en\u2002em\u2003 ZWSP\u200bx BOM\ufeffy',
    "contractions: IT'S HE'LL WE'VE THEY'RE I'M YOU'D DON'T don't it's 'S 'll ' s x'sy ſ'ſ 'ſ Ǆ'Ǆ",
    'titlecase ǅungla ǈ ǋ, modifiers ʰʲʷ ˈstress, roman ⅫⅣ, fractions ½¾ ², subscripts ₁₂',
    'digits: ' + digits.join(' ') + ' ' + digits.join(''),
    'arabic-indic ٠١٢٣٤٥٦٧٨٩ devanagari ०१२३ fullwidth １２３ ＡＢＣ',
    'mixed: HelloWorld CamelCase camelCase ABCdef aBC $100,000.00 foo/bar//baz\n/ ...!!!??? <|endoftext|> x<|endoftext|>y',
    'code: if (x) { return y->z[0]; }\n\tint main() {\r\n\t\treturn 0;\r\n}\r\n',
    'whitespace:   three before  two before\ttab\t\ttwo tabs \n\n  \n   \nend of line   \n\r\n \r\n',
    'leading and trailing ' + ' '.repeat(7) + '\n' + '\t \t \n' + ' '.repeat(33) + 'x',
    'lone surrogate halves are not text; U+FFFD \ufffd, private use \ue000, noncharacter \ufdd0, plane 16 \u{10fffd}',
  ];
  return parts.join('\n') + '\n' + 'a'.repeat(10000) + '\n' + ' '.repeat(1000) + 'end   \n\n';
}

const texts = {
  shakespeare: fs.readFileSync(shakespearePath, 'utf8'),
  torture: tortureText(),
};
// npm tiktoken is quadratic in the length of one piece (100,000 'a' take 23 s) and fails with
// "RuntimeError: unreachable" on a 1 MB piece, so the 1 MB run of one character is compared
// with HF tokenizers only; the torture text above carries a 10,000-character run for tiktoken.
const hfOnly = { run_1mb: 'x'.repeat(1 << 20) + '\n' + ' '.repeat(1 << 20) + 'y' };
for (const [name, text] of Object.entries({ ...texts, ...hfOnly })) fs.writeFileSync(path.join(work, name + '.txt'), text);

let failures = 0;
let checks = 0;

function ours(args) {
  const out = path.join(work, 'ids.bin');
  execFileSync(tool, ['encode', ...args.slice(0, 3), args[3], out, ...(args[4] ? [args[4]] : [])], { stdio: ['ignore', 'ignore', 'inherit'] });
  const buf = fs.readFileSync(out);
  return Array.from(new Int32Array(buf.buffer, buf.byteOffset, buf.length / 4));
}

function compare(label, expected, got, decode) {
  ++checks;
  const n = Math.min(expected.length, got.length);
  let i = 0;
  while (i < n && expected[i] === got[i]) ++i;
  if (i === expected.length && i === got.length) {
    console.log(`ok   ${label}: ${got.length} ids identical`);
    return;
  }
  ++failures;
  const show = (ids) => JSON.stringify(ids.slice(Math.max(0, i - 3), i + 5));
  let context = '';
  if (decode) { try { context = ' near ' + JSON.stringify(decode(expected.slice(Math.max(0, i - 3), i + 5))); } catch (e) { } }
  console.log(`FAIL ${label}: first difference at id ${i} (peer ${expected.length} ids, ours ${got.length})${context}\n     peer ${show(expected)}\n     ours ${show(got)}`);
}

async function main() {
const encodings = ['gpt2', 'cl100k_base', 'o200k_base'];
for (const name of encodings) {
  const enc = get_encoding(name);
  const decode = (ids) => new TextDecoder().decode(enc.decode(Uint32Array.from(ids)));
  const ranks = path.join(peers, name + '.tiktoken');
  const json = path.join(work, name + '.tokenizer.json');
  execFileSync(tool, ['write-hf', 'tiktoken', ranks, name, json], { stdio: 'inherit' });
  const hfTok = hf.Tokenizer.fromFile(json);
  for (const [tname, text] of Object.entries(texts)) {
    const file = path.join(work, tname + '.txt');
    const peer = Array.from(enc.encode_ordinary(text));
    compare(`${name} ${tname}: .tiktoken vs npm tiktoken`, peer, ours(['tiktoken', ranks, name, file]), decode);
    compare(`${name} ${tname}: written tokenizer.json vs npm tiktoken`, peer, ours(['hf', json, '-', file]), decode);
  }
  // HF always recognises added tokens, so ours is asked to recognise the special tokens here.
  for (const [tname, text] of Object.entries({ ...texts, ...hfOnly })) {
    const file = path.join(work, tname + '.txt');
    const peerHf = (await hfTok.encode(text, null, { addSpecialTokens: false })).getIds();
    compare(`${name} ${tname}: tokenizer.json in HF tokenizers vs ours`, Array.from(peerHf),
            ours(['hf', json, '-', file, 'special']), decode);
  }
  const special = 'a<|endoftext|>b <|endoftext|><|endoftext|>\n' + (name === 'cl100k_base' ? '<|fim_prefix|>x<|fim_suffix|><|endofprompt|>' : '');
  fs.writeFileSync(path.join(work, 'special.txt'), special);
  compare(`${name} special tokens allowed: .tiktoken vs npm tiktoken`, Array.from(enc.encode(special, 'all')),
          ours(['tiktoken', ranks, name, path.join(work, 'special.txt'), 'special']), decode);
}

// GPT-2's own files: as an HF BPE model with a ByteLevel pre-tokenizer, and through our
// tokenizer.json writer.
{
  const enc = path.join(peers, 'gpt2_encoder.json');
  const bpe = path.join(peers, 'gpt2_vocab.bpe');
  const model = await hf.BPE.fromFile(enc, bpe);
  const tok = new hf.Tokenizer(model);
  tok.setPreTokenizer(hf.byteLevelPreTokenizer(false, true));
  const json = path.join(work, 'gpt2_files.tokenizer.json');
  execFileSync(tool, ['write-hf', 'gpt2', enc, bpe, json], { stdio: 'inherit' });
  const written = hf.Tokenizer.fromFile(json);
  for (const [tname, text] of Object.entries(texts)) {
    const file = path.join(work, tname + '.txt');
    const mine = ours(['gpt2', enc, bpe, file]);
    compare(`GPT-2 encoder.json+vocab.bpe ${tname}: HF BPE.fromFile vs ours`,
            Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds()), mine);
    compare(`GPT-2 files ${tname}: our tokenizer.json in HF vs ours`,
            Array.from((await written.encode(text, null, { addSpecialTokens: false })).getIds()),
            ours(['gpt2', enc, bpe, file, 'special']));
  }
}
console.log(`${checks - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(1); });
