// The reference ids of the Kotlin BPE tests (BpeTest.kt), from npm tiktoken (OpenAI's Rust crate
// as WASM; the committed tests/npm lock). One line per case:
//   ENCODING <TAB> MODE <TAB> hex(UTF-8 text) <TAB> ids separated by spaces
// MODE is "ordinary" (special tokens are text: encode_ordinary) or "all" (every special token
// recognised: encode(text, "all")).
// Also a BPE training reference from Hugging Face tokenizers (npm binding, its default
// BpeTrainer: vocab_size 30000, min_frequency 0): OUT_DIR/train_input.txt (the texts above
// and a Unicode text, one training text per line as HF reads files) and OUT_DIR/hf_trained.json.
// Usage: node bpe_reference.js NODE_MODULES_DIR OUT_FILE
'use strict';
const fs = require('fs');
const path = require('path');
const [modules, out] = process.argv.slice(2);
if (!out) { console.error('usage: node bpe_reference.js NODE_MODULES_DIR OUT_FILE'); process.exit(2); }
const { get_encoding } = require(path.resolve(modules, 'tiktoken'));

const texts = [
  'First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n',
  "It's 12345 o'clock  --  they'll   see\t\tthe HelloWorld camelCase $100,000.00!!!",
  'Unicode: héllo wörld 漢字かなカナ 한국어 مرحبا हिन्दी 👨‍👩‍👧‍👦 👍🏽 e\u0301 NBSP\u00a0x',
  'special: a<|endoftext|>b <|endoftext|> <|fim_prefix|>',
];
const lines = [];
for (const name of ['gpt2', 'cl100k_base', 'o200k_base']) {
  const enc = get_encoding(name);
  for (const text of texts) {
    const hex = Buffer.from(text, 'utf8').toString('hex');
    lines.push([name, 'ordinary', hex, Array.from(enc.encode_ordinary(text)).join(' ')].join('\t'));
    lines.push([name, 'all', hex, Array.from(enc.encode(text, 'all')).join(' ')].join('\t'));
  }
  enc.free();
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, lines.join('\n') + '\n');

const hf = require(path.resolve(modules, 'tokenizers'));
const input = path.join(path.dirname(out), 'train_input.txt');
fs.writeFileSync(input, texts.join('\n').repeat(12));
// GPT-2's byte-level BPE with an empty model (the layout of GPT-2's tokenizer.json).
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const spec = {
  version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
  pre_tokenizer: byteLevel, post_processor: null, decoder: byteLevel,
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: false, byte_fallback: false, vocab: {}, merges: [] },
};
const tok = hf.Tokenizer.fromString(JSON.stringify(spec));
tok.train([input]);
tok.save(path.join(path.dirname(out), 'hf_trained.json'));
