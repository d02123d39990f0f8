// The HF tokenizers side of run_bpe_train.sh: a byte-level BPE (ByteLevel pre-tokenizer with
// GPT-2's regex, no prefix space) trained on a file with the npm binding's only trainer, the
// BPE model's default (vocab_size 30,000, min_frequency 0), then saved.
// Usage: node bench_bpe_train_hf.js TEXT OUT_TOKENIZER_JSON
'use strict';
const path = require('path');
const hf = require(path.join(__dirname, '..', 'tests', 'npm', 'node_modules', 'tokenizers'));

const [text, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node bench_bpe_train_hf.js TEXT OUT_TOKENIZER_JSON');
  process.exit(2);
}
const tok = new hf.Tokenizer(hf.BPE.empty());
tok.setPreTokenizer(hf.byteLevelPreTokenizer(false, true));
tok.train([text]);
tok.save(out);
console.log(`HF tokenizers: ${tok.getVocabSize()} tokens`);
