// The serialised payload of a byte-level BPE tokenizer (docs/tokenizer-format.md, kind 2).
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "tokenizer/bpe_tokenizer.hpp"
#include "tokenizer/tokenizer_format.hpp"

namespace pg {

namespace {

// Serialised flags beyond the first three.
constexpr uint32_t kFlagNfc = 8;
constexpr uint32_t kFlagAlwaysMatched = 16;
constexpr uint32_t kFlagDigitsEach = 32;  // HF Digits, individual_digits true
constexpr uint32_t kFlagDigitRuns = 64;   // HF Digits, individual_digits false
constexpr uint32_t kFlagTemplate = 128;   // the template's ids before and after the text follow

}  // namespace

// Payload of kind 2, minor 0 (docs/tokenizer-format.md). Flags 8 (NFC) and 16 (always-matched
// ids follow) are unknown to older readers, which refuse them rather than encode differently.
std::vector<uint8_t> BpeTokenizer::serialize() const {
    namespace fmt = tokenizer_format;
    fmt::Writer body;
    body.u32(uint32_t(pattern_));
    body.u32((tiktoken_rule_ ? 1u : 0u) | (ignore_merges_ ? 2u : 0u) | (add_prefix_space_ ? 4u : 0u) |
             (nfc_ ? kFlagNfc : 0u) | (always_matched_.empty() ? 0u : kFlagAlwaysMatched) |
             (digits_ == DigitSplit::kIndividual ? kFlagDigitsEach : 0u) | (digits_ == DigitSplit::kRuns ? kFlagDigitRuns : 0u) |
             (template_before_.empty() && template_after_.empty() ? 0u : kFlagTemplate));
    const auto put_tokens = [&](const std::vector<Token>& v) {
        body.u32(uint32_t(v.size()));
        for (const auto& t : v) {
            body.u32(uint32_t(t.id));
            body.u32(uint32_t(t.bytes.size()));
            body.bytes(reinterpret_cast<const uint8_t*>(t.bytes.data()), t.bytes.size());
        }
    };
    put_tokens(tokens_);
    body.u32(uint32_t(merges_.size()));
    for (const auto& m : merges_) {
        body.u32(uint32_t(m.left));
        body.u32(uint32_t(m.right));
    }
    put_tokens(specials_);
    if (!always_matched_.empty()) {
        body.u32(uint32_t(always_matched_.size()));
        for (int32_t id : always_matched_) body.u32(uint32_t(id));
    }
    if (!template_before_.empty() || !template_after_.empty())
        for (const auto* ids : {&template_before_, &template_after_}) {
            body.u32(uint32_t(ids->size()));
            for (int32_t id : *ids) body.u32(uint32_t(id));
        }
    if (regex_) {
        body.u32(uint32_t(regex_->pattern().size()));
        body.bytes(reinterpret_cast<const uint8_t*>(regex_->pattern().data()), regex_->pattern().size());
    }
    fmt::Writer w;
    fmt::write_header(w, PG_TOKENIZER_BPE, body.data().size());
    w.bytes(body.data().data(), body.data().size());
    return std::move(w.data());
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_payload(const uint8_t* payload, std::size_t len, uint16_t minor) {
    namespace fmt = tokenizer_format;
    fmt::Reader r(payload, len, fmt::kHeaderBytes);
    const uint32_t pattern = r.u32("BPE pattern");
    require(pattern >= 1 && pattern <= 5, PG_ERR_FORMAT,
            "serialised BPE tokenizer has unknown pattern " + std::to_string(pattern) + " at byte 16 (1..5)");
    const uint32_t flags = r.u32("BPE flags");
    require(flags < 256 && (flags & (kFlagDigitsEach | kFlagDigitRuns)) != (kFlagDigitsEach | kFlagDigitRuns), PG_ERR_FORMAT, "serialised BPE tokenizer has unknown flags " + std::to_string(flags) + " at byte 20");
    const auto get_tokens = [&](const char* what) {
        const std::size_t at = r.offset();
        const uint32_t count = r.u32(what);
        // Every entry takes at least 9 bytes: refuse a count the payload cannot hold before allocating.
        require(count <= r.remaining() / 9, PG_ERR_FORMAT,
                std::string("serialised BPE tokenizer declares ") + std::to_string(count) + " " + what + " at byte " +
                    std::to_string(at) + " but only " + std::to_string(r.remaining()) + " bytes follow");
        std::vector<Token> v(count);
        for (auto& t : v) {
            const uint32_t id = r.u32("token id");
            const uint32_t n = r.u32("token length");
            const uint8_t* b = r.bytes(n, "token bytes");
            if (id >= kMaxVocab)
                throw Error(PG_ERR_FORMAT,
                            "serialised BPE tokenizer has token id " + std::to_string(id) + " outside the id range");
            t.id = int32_t(id);
            t.bytes.assign(reinterpret_cast<const char*>(b), n);
        }
        return v;
    };
    std::vector<Token> tokens = get_tokens("tokens");
    const std::size_t at = r.offset();
    const uint32_t n_merges = r.u32("merge count");
    require(n_merges <= r.remaining() / 8, PG_ERR_FORMAT,
            "serialised BPE tokenizer declares " + std::to_string(n_merges) + " merges at byte " + std::to_string(at) +
                " but only " + std::to_string(r.remaining()) + " bytes follow");
    std::vector<Merge> merges(n_merges);
    for (auto& m : merges) {
        m.left = int32_t(r.u32("merge left id") & 0x7FFFFFFFu);
        m.right = int32_t(r.u32("merge right id") & 0x7FFFFFFFu);
    }
    std::vector<Token> specials = get_tokens("special tokens");
    std::vector<int32_t> always_matched;
    if (flags & kFlagAlwaysMatched) {
        const std::size_t count_at = r.offset();
        const uint32_t count = r.u32("always-matched count");
        require(count >= 1 && count <= r.remaining() / 4, PG_ERR_FORMAT,
                "serialised BPE tokenizer declares " + std::to_string(count) + " always-matched tokens at byte " +
                    std::to_string(count_at) + " (1.., with " + std::to_string(r.remaining()) + " bytes following)");
        always_matched.resize(count);
        for (auto& id : always_matched) id = int32_t(r.u32("always-matched id") & 0x7FFFFFFFu);
    }
    std::vector<int32_t> around[2];  // the template's ids before and after the text
    if (flags & kFlagTemplate)
        for (auto& ids : around) {
            const std::size_t count_at = r.offset();
            const uint32_t count = r.u32("template id count");
            require(count <= r.remaining() / 4, PG_ERR_FORMAT,
                    "serialised BPE tokenizer declares " + std::to_string(count) + " template ids at byte " +
                        std::to_string(count_at) + " but only " + std::to_string(r.remaining()) + " bytes follow");
            ids.resize(count);
            for (auto& id : ids) id = int32_t(r.u32("template id") & 0x7FFFFFFFu);
        }
    std::string regex;
    if (bpe::Pattern(pattern) == bpe::Pattern::kRegex) {
        const uint32_t length = r.u32("Split regex length");
        const uint8_t* text = r.bytes(length, "Split regex");
        regex.assign(reinterpret_cast<const char*>(text), length);
    }
    require(minor > tokenizer_format::kMinor || r.remaining() == 0, PG_ERR_FORMAT,
            "serialised BPE tokenizer has " + std::to_string(r.remaining()) + " unexpected bytes after its fields");
    const bpe::Pattern pat = bpe::Pattern(pattern);
    std::unique_ptr<BpeTokenizer> t;
    if (flags & 1u) {
        require(n_merges == 0 && (flags & 6u) == 0, PG_ERR_FORMAT,
                "serialised BPE tokenizer with tiktoken's rule carries merges or merge-list flags");
        t = from_ranks(pat, std::move(tokens), std::move(specials));
    } else {
        t = from_merges(pat, std::move(tokens), merges, std::move(specials), (flags & 2u) != 0, (flags & 4u) != 0);
    }
    t->set_text_rules((flags & kFlagNfc) != 0, std::move(always_matched));
    if (bpe::Pattern(pattern) == bpe::Pattern::kRegex) t->set_split_regex(regex, "serialised BPE tokenizer's Split regex");
    t->set_template(std::move(around[0]), std::move(around[1]));
    if (flags & kFlagDigitsEach) t->set_digit_split(DigitSplit::kIndividual);
    if (flags & kFlagDigitRuns) t->set_digit_split(DigitSplit::kRuns);
    return t;
}

}  // namespace pg
