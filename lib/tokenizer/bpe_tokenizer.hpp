// Byte-level BPE (kind 2): the regex pre-split of bpe_pretokenize.hpp, then merges by rank
// inside each piece, over bytes, so any byte string encodes. One model covers both merge rules
// that files carry:
//  - tiktoken's (.tiktoken rank files): the id of a token is its rank; two adjacent parts merge
//    when their concatenation is a token, lowest rank first. A piece that is a token is that
//    token (looked up whole first).
//  - a merge list's (GPT-2's vocab.bpe, Hugging Face tokenizer.json): adjacent parts (a, b)
//    merge when (a, b) is in the list, earliest merge first, into the token of their bytes. A
//    piece is looked up whole only where that gives the same ids (the token is what merging
//    its own bytes yields) or when the file says so (HF's ignore_merges).
// Both are "the lowest-priority adjacent pair merges first, the leftmost among equals", kept in
// one pair table (priority, result). Special tokens are matched in the text only when the
// caller allows them; by default they are ordinary text. Some files (Hugging Face's non-special
// added tokens, Qwen's <think>) have tokens of the special kind matched in every encode, and
// an NFC normalizer applied to the text between such tokens before the pre-split. encode/decode
// are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_pretokenize.hpp"
#include "tokenizer/bpe_regex.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {

class BpeTokenizer final : public Tokenizer {
public:
    // The largest vocabulary (id range) accepted from any file: ids stay far inside int32 and
    // tables stay bounded before anything big is allocated.
    static constexpr uint32_t kMaxVocab = 1u << 24;

    struct Token {
        int32_t id;
        std::string bytes;
    };
    struct Merge {  // in priority order for merge-list tokenizers
        int32_t left, right;
    };

    // tiktoken rule: ranks[i].id is the rank. The 256 single bytes must be tokens.
    static std::unique_ptr<BpeTokenizer> from_ranks(bpe::Pattern pattern, std::vector<Token> ranks,
                                                    std::vector<Token> specials);
    // Merge-list rule: vocab (id, bytes), merges in priority order (left and right are ids; the
    // result is the token of their concatenated bytes, which must exist). ignore_merges: look
    // every piece up whole first (HF's flag). add_prefix_space: HF ByteLevel's option (a space
    // is put before text that does not start with one).
    static std::unique_ptr<BpeTokenizer> from_merges(bpe::Pattern pattern, std::vector<Token> vocab,
                                                     const std::vector<Merge>& merges,
                                                     std::vector<Token> specials, bool ignore_merges,
                                                     bool add_prefix_space);
    static std::unique_ptr<BpeTokenizer> from_payload(const uint8_t* payload, std::size_t len,
                                                      uint16_t minor_version);
    // Hugging Face's text rules: `nfc` normalizes the text (NFC) between matched tokens;
    // `always_matched` are special-token ids matched in every encode (HF's non-special added
    // tokens). PG_ERR_FORMAT for an id that is not a special token.
    void set_text_rules(bool nfc, std::vector<int32_t> always_matched);
    // The tokens HF's TemplateProcessing puts around one text (Llama 3's <|begin_of_text|>
    // before it): special-token ids. encode never adds them; callers ask for them
    // (pg_encode_options.add_special_tokens). PG_ERR_FORMAT for an id that is no special token.
    void set_template(std::vector<int32_t> before, std::vector<int32_t> after);
    const std::vector<int32_t>& template_before() const { return template_before_; }
    const std::vector<int32_t>& template_after() const { return template_after_; }
    // HF's Digits pre-tokenizer before the pattern (SmolLM2): every \p{N} character a piece of
    // its own (kIndividual) or every run of them (kRuns), the pattern splitting the rest.
    enum class DigitSplit : uint8_t { kNone = 0, kIndividual = 1, kRuns = 2 };
    void set_digit_split(DigitSplit d) { digits_ = d; }
    DigitSplit digit_split() const { return digits_; }
    // Pre-split with this regex (bpe_regex.hpp) instead of a built-in pattern: the pattern
    // becomes kRegex. PG_ERR_FORMAT naming `where` for a regex that does not compile.
    void set_split_regex(const std::string& regex, const std::string& where);

    pg_tokenizer_kind kind() const override { return PG_TOKENIZER_BPE; }
    int32_t vocab_size() const override { return vocab_size_; }
    // Ordinary text: special tokens are not recognised.
    std::vector<int32_t> encode(std::string_view text) const override;
    // With the special tokens whose ids are in `allowed` (all of them if allow_all) matched
    // in the text first; the rest is ordinary text.
    std::vector<int32_t> encode_with_special(std::string_view text, const std::vector<int32_t>& allowed,
                                             bool allow_all) const;
    void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;
    std::string decode(const int32_t* ids, std::size_t n) const override;
    int64_t token_length(int32_t id) const override;
    std::vector<uint8_t> serialize() const override;
    std::unique_ptr<Tokenizer> clone() const override;

    // Introspection for the writers and the C API.
    bpe::Pattern pattern() const { return pattern_; }
    bool tiktoken_rule() const { return tiktoken_rule_; }
    bool ignore_merges() const { return ignore_merges_; }
    bool add_prefix_space() const { return add_prefix_space_; }
    bool nfc() const { return nfc_; }
    // The Split regex of a kRegex tokenizer, or nullptr.
    const std::string* split_regex() const { return regex_ ? &regex_->pattern() : nullptr; }
    const std::vector<int32_t>& always_matched() const { return always_matched_; }
    bool is_always_matched(int32_t id) const;
    // The bytes of an ordinary or special token, or nullptr for an id that is neither.
    const std::string* token_bytes(int32_t id) const;
    bool is_special(int32_t id) const;
    const std::vector<Token>& specials() const { return specials_; }
    // Ordinary tokens by increasing id.
    const std::vector<Token>& tokens() const { return tokens_; }
    // The merge list in priority order. For a tiktoken-rule tokenizer it is derived (each
    // token above the single bytes from the two parts merging its own bytes ends with) and
    // fails with PG_ERR_UNSUPPORTED naming a token whose bytes do not merge into it.
    std::vector<Merge> merge_list() const;
    // The special token id named by `text`, or -1.
    int32_t special_id(std::string_view text) const;

private:
    struct Span {  // where an id's bytes are in arena_
        uint32_t offset, length;
    };
    // bytes -> ordinary id; id -1 is empty. A token of up to 8 bytes is compared in the slot
    // alone (its length and its bytes as one number, load_head), a longer one by its first 8
    // bytes there and the rest in arena_.
    struct ByteSlot {
        uint64_t head;   // load_head of the token's bytes
        int32_t id;
        uint32_t meta;   // length (bits 0..20, < 1 MiB) | kWholeOk
    };
    static constexpr uint32_t kLengthMask = (1u << 21) - 1;
    static constexpr uint32_t kWholeOk = 1u << 31;  // the piece equal to the token's bytes encodes to it
    struct PairSlot {  // (left << 32 | right) -> (priority, result); key kEmptyPair is empty
        uint64_t key;
        uint32_t priority;
        int32_t result;
    };
    struct PairValue {
        uint32_t priority;  // UINT32_MAX: no merge
        int32_t result;
    };

    BpeTokenizer() = default;
    void build(bool derive_pairs_from_ranks, const std::vector<Merge>* merges);
    void encode_piece(const unsigned char* p, std::size_t n, std::size_t offset, std::vector<int32_t>& out) const;
    // The pieces of p[0, n) by the pattern (or the Split regex), encoded; `base` is p's offset
    // in the text for messages.
    void encode_pattern_pieces(const unsigned char* p, std::size_t n, std::size_t base, std::size_t shift,
                               std::vector<int32_t>& out) const;
    // A piece that is no whole token: its bytes checked, then merged.
    void encode_merged(const unsigned char* p, std::size_t n, std::size_t offset, std::vector<int32_t>& out) const;
    void merge_small(const unsigned char* p, std::size_t n, std::vector<int32_t>& out) const;
    void merge_large(const unsigned char* p, std::size_t n, std::vector<int32_t>& out) const;
    int32_t lookup_bytes(const unsigned char* p, std::size_t n) const;
    // The slot of the ordinary token whose bytes are p[0, n) (n >= 1), or nullptr.
    const ByteSlot* find_bytes(const unsigned char* p, std::size_t n) const;
    bool pair_lookup(int32_t a, int32_t b, uint32_t* priority, int32_t* result) const;
    // The merge of the single-byte tokens of bytes a and b (priority UINT32_MAX if none).
    PairValue byte_pair(unsigned char a, unsigned char b) const { return byte_pair_[std::size_t(a) << 8 | b]; }

    bpe::Pattern pattern_ = bpe::Pattern::kGpt2;
    bool tiktoken_rule_ = true;
    bool ignore_merges_ = false;
    bool add_prefix_space_ = false;
    bool nfc_ = false;
    std::vector<int32_t> always_matched_;  // sorted special-token ids
    std::shared_ptr<const bpe::SplitRegex> regex_;  // kRegex only; immutable, shared by clones
    DigitSplit digits_ = DigitSplit::kNone;
    std::vector<int32_t> template_before_, template_after_;
    int32_t vocab_size_ = 0;
    std::vector<Token> tokens_;    // ordinary tokens, by increasing id
    std::vector<Token> specials_;  // by increasing id
    std::vector<Merge> merges_;    // merge-list rule only, priority order

    // Derived tables (rebuilt by build()). The hash tables keep what a probe compares in the
    // slot itself, so a miss costs one cache line and so does a hit on a token of up to 8
    // bytes (a longer one also reads the rest of its bytes).
    std::vector<int32_t> byte_token_;      // 256: the token of each single byte, or -1
    std::vector<Span> span_of_;            // id -> bytes (offset UINT32_MAX: no such id), size vocab_size_
    std::size_t longest_token_ = 0;        // bytes of the longest ordinary token
    std::string arena_;                    // every token's bytes
    std::vector<uint8_t> special_flag_;    // id -> is a special token
    std::vector<ByteSlot> byte_table_;     // open addressing
    uint64_t byte_mask_ = 0;
    // One bit per hash value (8 bits a token, so ~12% false positives): a piece whose bit is
    // clear is no token, found without touching byte_table_. On random bytes nearly every
    // whole-piece lookup is a miss, and a cache miss into the table each was most of the time.
    std::vector<uint64_t> maybe_token_;
    uint64_t maybe_mask_ = 0;
    std::vector<PairSlot> pair_table_;     // open addressing
    uint64_t pair_mask_ = 0;
    // 256 x 256: the merge of two single-byte tokens by their bytes (every piece's first
    // round of lookups), 512 KiB that stays in cache where the pair table would not.
    std::vector<PairValue> byte_pair_;
};

}  // namespace pg
