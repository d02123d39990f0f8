// Tokenizers read from the files people have (phonegpt tokenizer, phonegpt train --tokenizer):
//   a native checkpoint (.bin, .pgck): its tokenizer;
//   a tiktoken rank file (.tiktoken): with --encoding, or the encoding its name says
//     (cl100k_base.tiktoken -> cl100k_base);
//   GPT-2's encoder.json (vocab.json) with --merges vocab.bpe (merges.txt);
//   a Hugging Face tokenizer.json (any other .json).
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

// The options that name a tokenizer file: --tokenizer PATH, --merges PATH, --encoding NAME.
std::vector<OptionSpec> tokenizer_file_options();
// The tokenizer --tokenizer names (a usage error when the option or the file is missing).
TokenizerPtr load_tokenizer(const Options& opt);
// "char" or "bpe".
std::string tokenizer_kind_name(const pg_tokenizer* tok);
int32_t vocab_size_of(const pg_tokenizer* tok);

}  // namespace cli
