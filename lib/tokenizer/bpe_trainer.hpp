// Training a byte-level BPE vocabulary on texts, with the merges Hugging Face tokenizers'
// BpeTrainer finds on the same words (docs/tokenizer-format.md, "Training"):
//  - each text is pre-split by the pattern (gpt2, cl100k or o200k) and the pieces counted
//    (on several threads: a text is cut only where the pattern must end a piece);
//  - every piece is a word of single bytes; the pair with the highest count over all words
//    merges next, ties going to the smallest (left id, right id), ids being HF's: special tokens
//    first, then the 256 bytes ordered by their byte-level character, then new tokens in the
//    order they are made;
//  - pair counts change incrementally as merges happen, in a max-heap whose stale entries are
//    re-queued when popped (no rescan of the words per merge); a popped pair merges in the
//    words its entry lists, exactly as HF's trainer does, so that its occasional repeat of a
//    pair (a token made a second way re-creates a merged pair) is repeated here; the merge list
//    keeps a repeated pair at its last place, as HF's saved tokenizer.json does.
// Training stops at vocab_size tokens (specials + 256 bytes + merged tokens), when no pair is
// left, or when the best pair occurs fewer than min_frequency times. The result does not
// depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_pretokenize.hpp"
#include "tokenizer/bpe_tokenizer.hpp"

namespace pg::bpe {

struct TrainOptions {
    int32_t vocab_size = 4096;      // >= 256 + special tokens
    int64_t min_frequency = 2;      // a pair merges only if it occurs at least this often
    Pattern pattern = Pattern::kGpt2;
    std::vector<std::string> special_tokens;  // ids 0.. in this order; ordinary text in training
    int n_threads = 0;              // <= 0: all cores
    // Called after each merge with (tokens so far, vocab_size); returning false cancels
    // (PG_ERR_CANCELLED).
    std::function<bool(int64_t, int64_t)> progress;
};

std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string_view>& texts, const TrainOptions& options);

}  // namespace pg::bpe
