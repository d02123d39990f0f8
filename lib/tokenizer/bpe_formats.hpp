// The BPE file formats people have, read and written:
//  - tiktoken rank files (.tiktoken): one "base64(token bytes) rank" line per token, ranks
//    0..n-1 without holes; the pre-tokenizer and the special tokens come from the encoding
//    name (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) or a pattern's regex text.
//  - GPT-2's encoder.json (token -> id, tokens in the byte-to-unicode alphabet) and vocab.bpe
//    (a "#version" line, then one merge "left right" per line, by priority); the pattern is
//    GPT-2's. Vocabulary entries that no merge or single byte makes (<|endoftext|>) are the
//    special tokens.
//  - Hugging Face tokenizer.json: model BPE (vocab, merges as "a b" strings or [a, b] pairs,
//    ignore_merges), pre_tokenizer ByteLevel (use_regex, add_prefix_space), a Sequence of a
//    Split (Isolated; built-in patterns or PCRE2) and a ByteLevel without regex, or of Digits
//    and a ByteLevel with GPT-2's regex (SmolLM2), decoder
//    ByteLevel, normalizer NFC (or a Sequence of NFC), added_tokens (HF's special ones are
//    special tokens here, matched only when allowed; its non-special ones are matched always).
// Every reader validates everything and throws PG_ERR_FORMAT (malformed) or
// PG_ERR_UNSUPPORTED (valid but asks for something this library does not do) naming the
// field, line or entry.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.hpp"

namespace pg::bpe {

// `encoding` is an encoding name or the exact regex text of one of the patterns (no special
// tokens then).
std::unique_ptr<BpeTokenizer> load_tiktoken(std::string_view data, const std::string& encoding);
std::string write_tiktoken(const BpeTokenizer& t);

std::unique_ptr<BpeTokenizer> load_gpt2(std::string_view encoder_json, std::string_view vocab_bpe);
void write_gpt2(const BpeTokenizer& t, std::string* encoder_json, std::string* vocab_bpe);

std::unique_ptr<BpeTokenizer> load_hf(std::string_view tokenizer_json);
std::string write_hf(const BpeTokenizer& t);

// GPT-2's byte-to-unicode alphabet: the code point that stands for each byte.
uint32_t byte_to_unicode(uint8_t b);

}  // namespace pg::bpe
