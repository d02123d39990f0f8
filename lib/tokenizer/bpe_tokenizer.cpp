// Byte-level BPE: tables, the merge loop (a flat array for short pieces, a heap over a linked
// list for long ones so that one huge piece stays O(n log n)), special tokens (the serialised
// payload is bpe_payload.cpp).
#include "tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <functional>

#include "core/error.hpp"
#include "tokenizer/bpe_unicode.hpp"
#include "tokenizer/unicode_nfc.hpp"

namespace pg {

namespace {

constexpr uint32_t kNoPriority = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNoOffset = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kEmptyPair = std::numeric_limits<uint64_t>::max();
// Pieces shorter than this merge in a flat array (quadratic but tiny); longer ones use a heap.
constexpr std::size_t kSmallPiece = 64;

uint64_t mix(uint64_t h) {
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ull;
    h ^= h >> 27;
    h *= 0x81dadef4bc2dd44dull;
    h ^= h >> 33;
    return h;
}

// The first min(n, 8) bytes of p (n >= 1) as one number, zero above them, without reading
// past p[n - 1]: two overlapping loads instead of a variable-length copy (a call to memcpy).
// Equal numbers for equal n mean equal bytes.
[[gnu::always_inline]] inline uint64_t load_head(const unsigned char* p, std::size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint64_t v = 0;
    for (std::size_t i = 0; i < n && i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
#else
    uint64_t v;
    if (n >= 8) {
        std::memcpy(&v, p, 8);
        return v;
    }
    if (n >= 4) {  // bytes 0..3 and n-4..n-1; the overlap holds the same bytes in both
        uint32_t lo, hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + n - 4, 4);
        return uint64_t(lo) | (uint64_t(hi) << (8 * (n - 4)));
    }
    return uint64_t(p[0]) | (uint64_t(p[n >> 1]) << (8 * (n >> 1))) | (uint64_t(p[n - 1]) << (8 * (n - 1)));
#endif
}

// The hash of p[0, n) whose first bytes are `head` (load_head): for up to 8 bytes a bijective
// mix of the number and the length, longer ones fold in 8 bytes at a time.
[[gnu::always_inline]] inline uint64_t hash_bytes(const unsigned char* p, std::size_t n, uint64_t head) {
    if (n <= 8) return mix(head ^ (uint64_t(n) * 0xff51afd7ed558ccdull));
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(n) * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        h = (h ^ v) * 0x94d049bb133111ebull;
    }
    return mix(h);
}

uint64_t table_capacity(std::size_t count) {
    uint64_t cap = 16;
    while (cap < 2 * uint64_t(count)) cap <<= 1;
    return cap;
}

std::string describe_bytes(const std::string& b) {
    std::string out = "\"";
    for (unsigned char c : b) {
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            out.push_back(char(c));
        } else {
            static const char* hex = "0123456789ABCDEF";
            out += "\\x";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
        if (out.size() > 60) return out + "...\"";
    }
    return out + "\"";
}

// Per-token checks build their message only on failure (they run for every token of a load).
void validate_tokens(const std::vector<BpeTokenizer::Token>& v, const char* what) {
    for (const auto& t : v) {
        if (t.id < 0 || uint32_t(t.id) >= BpeTokenizer::kMaxVocab)
            throw Error(PG_ERR_FORMAT, std::string(what) + " id " + std::to_string(t.id) + " is outside 0.." +
                                           std::to_string(BpeTokenizer::kMaxVocab - 1));
        if (t.bytes.empty())
            throw Error(PG_ERR_FORMAT, std::string(what) + " id " + std::to_string(t.id) + " is empty");
        if (t.bytes.size() >= (1u << 20))
            throw Error(PG_ERR_FORMAT, std::string(what) + " id " + std::to_string(t.id) + " is longer than 1 MiB");
    }
}

}  // namespace

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_ranks(bpe::Pattern pattern, std::vector<Token> ranks,
                                                       std::vector<Token> specials) {
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
    t->pattern_ = pattern;
    t->tiktoken_rule_ = true;
    t->tokens_ = std::move(ranks);
    t->specials_ = std::move(specials);
    t->build(true, nullptr);
    return t;
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_merges(bpe::Pattern pattern, std::vector<Token> vocab,
                                                        const std::vector<Merge>& merges,
                                                        std::vector<Token> specials, bool ignore_merges,
                                                        bool add_prefix_space) {
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
    t->pattern_ = pattern;
    t->tiktoken_rule_ = false;
    t->ignore_merges_ = ignore_merges;
    t->add_prefix_space_ = add_prefix_space;
    t->tokens_ = std::move(vocab);
    t->specials_ = std::move(specials);
    t->build(false, &merges);
    return t;
}

void BpeTokenizer::build(bool derive_pairs_from_ranks, const std::vector<Merge>* merges) {
    validate_tokens(tokens_, "token");
    validate_tokens(specials_, "special token");
    const auto by_id = [](const Token& a, const Token& b) { return a.id < b.id; };
    // Loaders mostly hand tokens over in id order already: a sort is paid only when needed.
    if (!std::is_sorted(tokens_.begin(), tokens_.end(), by_id)) std::sort(tokens_.begin(), tokens_.end(), by_id);
    if (!std::is_sorted(specials_.begin(), specials_.end(), by_id)) std::sort(specials_.begin(), specials_.end(), by_id);
    require(!tokens_.empty(), PG_ERR_FORMAT, "BPE vocabulary is empty");
    for (std::size_t i = 1; i < tokens_.size(); ++i)
        if (tokens_[i].id == tokens_[i - 1].id)
            throw Error(PG_ERR_FORMAT, "id " + std::to_string(tokens_[i].id) + " is given to two tokens (" +
                                           describe_bytes(tokens_[i - 1].bytes) + " and " +
                                           describe_bytes(tokens_[i].bytes) + ")");
    for (std::size_t i = 1; i < specials_.size(); ++i)
        if (specials_[i].id == specials_[i - 1].id)
            throw Error(PG_ERR_FORMAT, "special token id " + std::to_string(specials_[i].id) + " is given twice");
    int32_t max_id = tokens_.back().id;
    if (!specials_.empty()) max_id = std::max(max_id, specials_.back().id);
    vocab_size_ = max_id + 1;

    // Bytes of every id: ordinary tokens, then specials that have no ordinary token.
    span_of_.assign(std::size_t(vocab_size_), Span{kNoOffset, 0});
    special_flag_.assign(std::size_t(vocab_size_), 0);
    std::size_t total = 0;
    for (const auto& t : tokens_) total += t.bytes.size();
    for (const auto& s : specials_) total += s.bytes.size();
    require(total < kNoOffset, PG_ERR_FORMAT, "BPE vocabulary has more than 4 GiB of token bytes");
    arena_.clear();
    arena_.reserve(total);
    longest_token_ = 0;
    for (const auto& t : tokens_) {
        span_of_[std::size_t(t.id)] = Span{uint32_t(arena_.size()), uint32_t(t.bytes.size())};
        arena_ += t.bytes;
        longest_token_ = std::max(longest_token_, t.bytes.size());
    }
    for (const auto& s : specials_) {
        special_flag_[std::size_t(s.id)] = 1;
        const Span span = span_of_[std::size_t(s.id)];
        if (span.offset != kNoOffset) {
            if (std::string_view(arena_.data() + span.offset, span.length) != s.bytes)
                throw Error(PG_ERR_FORMAT, "special token " + describe_bytes(s.bytes) + " has id " +
                                               std::to_string(s.id) + ", which is the ordinary token " +
                                               describe_bytes(arena_.substr(span.offset, span.length)));
            continue;
        }
        span_of_[std::size_t(s.id)] = Span{uint32_t(arena_.size()), uint32_t(s.bytes.size())};
        arena_ += s.bytes;
    }

    // bytes -> ordinary id
    const uint64_t cap = table_capacity(tokens_.size());
    byte_mask_ = cap - 1;
    byte_table_.assign(cap, ByteSlot{0, -1, 0});
    maybe_mask_ = 4 * cap - 1;  // cap >= 2 tokens, so >= 8 bits a token
    maybe_token_.assign((maybe_mask_ + 1) / 64, 0);
    byte_token_.assign(256, -1);
    for (const auto& t : tokens_) {
        const auto* p = reinterpret_cast<const unsigned char*>(t.bytes.data());
        const std::size_t n = t.bytes.size();
        const uint64_t head = load_head(p, n);
        const uint64_t hash = hash_bytes(p, n, head);
        uint64_t h = hash & byte_mask_;
        for (; byte_table_[h].id >= 0; h = (h + 1) & byte_mask_) {
            const ByteSlot other = byte_table_[h];
            const Span span = span_of_[std::size_t(other.id)];
            if (other.head == head && span.length == n && std::memcmp(arena_.data() + span.offset, p, n) == 0)
                throw Error(PG_ERR_FORMAT, "tokens " + std::to_string(other.id) + " and " + std::to_string(t.id) +
                                               " have the same bytes " + describe_bytes(t.bytes));
        }
        byte_table_[h] = ByteSlot{head, t.id, uint32_t(n)};  // validate_tokens: n < 1 MiB
        const uint64_t bit = (hash >> 32) & maybe_mask_;
        maybe_token_[bit >> 6] |= uint64_t(1) << (bit & 63);
        if (n == 1) byte_token_[p[0]] = t.id;
    }

    // (left, right) -> (priority, result)
    merges_.clear();
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    if (derive_pairs_from_ranks) {
        for (const auto& t : tokens_) {
            const auto* p = reinterpret_cast<const unsigned char*>(t.bytes.data());
            for (std::size_t k = 1; k < t.bytes.size(); ++k) {
                const int32_t a = lookup_bytes(p, k);
                if (a < 0) continue;  // (most prefixes of a long token are no token: skip the second lookup)
                const int32_t b = lookup_bytes(p + k, t.bytes.size() - k);
                if (b >= 0)
                    pairs.emplace_back((uint64_t(uint32_t(a)) << 32) | uint32_t(b),
                                       (uint64_t(uint32_t(t.id)) << 32) | uint32_t(t.id));
            }
        }
    } else {
        merges_ = *merges;
        std::string joined;
        for (std::size_t m = 0; m < merges_.size(); ++m) {
            const Merge& mg = merges_[m];
            const std::string* l = token_bytes(mg.left);
            const std::string* r = token_bytes(mg.right);
            if (!l || !r || is_special(mg.left) || is_special(mg.right))
                throw Error(PG_ERR_FORMAT, "merge " + std::to_string(m) + " (" + std::to_string(mg.left) + ", " +
                                               std::to_string(mg.right) + ") names an id that is no ordinary token");
            joined = *l + *r;
            const int32_t result = lookup_bytes(reinterpret_cast<const unsigned char*>(joined.data()), joined.size());
            if (result < 0)
                throw Error(PG_ERR_FORMAT, "merge " + std::to_string(m) + " makes " + describe_bytes(joined) +
                                               ", which is not in the vocabulary");
            pairs.emplace_back((uint64_t(uint32_t(mg.left)) << 32) | uint32_t(mg.right),
                               (uint64_t(m) << 32) | uint32_t(result));
        }
    }
    const uint64_t pcap = table_capacity(pairs.size());
    pair_mask_ = pcap - 1;
    pair_table_.assign(pcap, PairSlot{kEmptyPair, 0, 0});
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        uint64_t h = mix(pairs[i].first) & pair_mask_;
        while (pair_table_[h].key != kEmptyPair) {
            if (pair_table_[h].key == pairs[i].first)
                throw Error(PG_ERR_FORMAT, "merge " + std::to_string(i) + " (" + std::to_string(pairs[i].first >> 32) +
                                               ", " + std::to_string(pairs[i].first & 0xFFFFFFFFu) + ") is listed twice");
            h = (h + 1) & pair_mask_;
        }
        pair_table_[h] = PairSlot{pairs[i].first, uint32_t(pairs[i].second >> 32), int32_t(pairs[i].second & 0xFFFFFFFFu)};
    }
    byte_pair_.assign(256 * 256, PairValue{kNoPriority, -1});
    for (unsigned a = 0; a < 256; ++a)
        for (unsigned b = 0; b < 256; ++b) {
            PairValue& v = byte_pair_[a << 8 | b];
            if (byte_token_[a] < 0 || byte_token_[b] < 0 || !pair_lookup(byte_token_[a], byte_token_[b], &v.priority, &v.result))
                v = PairValue{kNoPriority, -1};
        }

    // Where a whole-piece lookup gives the ids merging would: kWholeOk in the token's slot.
    std::vector<int32_t> ids;
    for (const auto& t : tokens_) {
        bool ok = tiktoken_rule_ || ignore_merges_ || t.bytes.size() == 1;
        if (!ok) {
            ids.clear();
            const auto* p = reinterpret_cast<const unsigned char*>(t.bytes.data());
            bool all_bytes = true;
            for (unsigned char c : t.bytes) all_bytes = all_bytes && byte_token_[c] >= 0;
            if (all_bytes) {
                if (t.bytes.size() < kSmallPiece) merge_small(p, t.bytes.size(), ids);
                else merge_large(p, t.bytes.size(), ids);
                ok = ids.size() == 1 && ids[0] == t.id;
            }
        }
        if (ok) {
            const ByteSlot* slot = find_bytes(reinterpret_cast<const unsigned char*>(t.bytes.data()), t.bytes.size());
            byte_table_[std::size_t(slot - byte_table_.data())].meta |= kWholeOk;
        }
    }
}

[[gnu::always_inline]] inline const BpeTokenizer::ByteSlot* BpeTokenizer::find_bytes(const unsigned char* p,
                                                                                    std::size_t n) const {
    if (n == 0 || n > longest_token_) return nullptr;
    const uint64_t head = load_head(p, n);
    const uint64_t hash = hash_bytes(p, n, head);
    const uint64_t bit = (hash >> 32) & maybe_mask_;
    if (((maybe_token_[bit >> 6] >> (bit & 63)) & 1) == 0) return nullptr;
    for (uint64_t h = hash & byte_mask_;; h = (h + 1) & byte_mask_) {
        const ByteSlot& slot = byte_table_[h];
        if (slot.id < 0) return nullptr;
        if (slot.head != head || (slot.meta & kLengthMask) != n) continue;
        if (n <= 8) return &slot;
        const Span span = span_of_[std::size_t(slot.id)];
        if (std::memcmp(arena_.data() + span.offset + 8, p + 8, n - 8) == 0) return &slot;
    }
}

int32_t BpeTokenizer::lookup_bytes(const unsigned char* p, std::size_t n) const {
    const ByteSlot* slot = find_bytes(p, n);
    return slot ? slot->id : -1;
}

bool BpeTokenizer::pair_lookup(int32_t a, int32_t b, uint32_t* priority, int32_t* result) const {
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    uint64_t h = mix(key) & pair_mask_;
    for (;;) {
        const PairSlot& slot = pair_table_[h];
        if (slot.key == kEmptyPair) return false;
        if (slot.key == key) {
            *priority = slot.priority;
            *result = slot.result;
            return true;
        }
        h = (h + 1) & pair_mask_;
    }
}

const std::string* BpeTokenizer::token_bytes(int32_t id) const {
    if (id < 0 || id >= vocab_size_) return nullptr;
    // Ordinary first (binary search by id), then specials.
    auto it = std::lower_bound(tokens_.begin(), tokens_.end(), id, [](const Token& t, int32_t v) { return t.id < v; });
    if (it != tokens_.end() && it->id == id) return &it->bytes;
    auto st = std::lower_bound(specials_.begin(), specials_.end(), id, [](const Token& t, int32_t v) { return t.id < v; });
    if (st != specials_.end() && st->id == id) return &st->bytes;
    return nullptr;
}

bool BpeTokenizer::is_special(int32_t id) const {
    return id >= 0 && id < vocab_size_ && special_flag_[std::size_t(id)] != 0;
}

int32_t BpeTokenizer::special_id(std::string_view text) const {
    for (const auto& s : specials_)
        if (s.bytes == text) return s.id;
    return -1;
}

// The flat-array merge (tiktoken's byte_pair_merge): repeatedly merge the adjacent pair of
// lowest priority, the leftmost among equals.
void BpeTokenizer::merge_small(const unsigned char* p, std::size_t n, std::vector<int32_t>& out) const {
    // key[i]: the pair (ids[i], ids[i + 1]) as priority << 32 | result, so the smallest key is
    // the lowest priority and, as the first one found, the leftmost (equal priorities are one
    // merge, so equal keys); no merge is kNoPriority << 32, above every real one.
    int32_t ids[kSmallPiece];
    uint64_t key[kSmallPiece];
    constexpr uint64_t kNoMerge = uint64_t(kNoPriority) << 32;
    const auto pack = [](const PairValue& v) { return uint64_t(v.priority) << 32 | uint32_t(v.result); };
    std::size_t m = n;
    for (std::size_t i = 0; i < n; ++i) ids[i] = byte_token_[p[i]];
    const auto rank_pair = [&](std::size_t i) {
        PairValue v;
        key[i] = pair_lookup(ids[i], ids[i + 1], &v.priority, &v.result) ? pack(v) : kNoMerge;
    };
    for (std::size_t i = 0; i + 1 < m; ++i) key[i] = pack(byte_pair(p[i], p[i + 1]));
    while (m > 1) {
        std::size_t best = 0;
        uint64_t best_key = key[0];
        for (std::size_t i = 1; i + 1 < m; ++i)
            if (key[i] < best_key) best_key = key[i], best = i;
        if (best_key >= kNoMerge) break;
        ids[best] = int32_t(uint32_t(best_key));
        for (std::size_t i = best + 1; i + 1 < m; ++i) ids[i] = ids[i + 1], key[i] = key[i + 1];
        --m;
        if (best + 1 < m) rank_pair(best);
        if (best > 0) rank_pair(best - 1);
    }
    out.insert(out.end(), ids, ids + m);
}

// The same rule for long pieces, in two phases over a doubly linked list of parts.
// Sweeps first: with p the lowest priority present, one pass left to right merges every pair
// of priority p. That is exactly what merging the leftmost lowest pair one at a time does, as
// long as no merge makes a pair of priority <= p (then that pair would go first): a merge
// that does switches to the heap phase from the state reached, as does a 65th sweep (pieces
// that need many distinct merges). The heap phase: a min-heap of 64-bit keys (priority << 32 |
// position, so ties go to the leftmost); a popped key is checked against the pair now at its
// position and skipped if stale. A 1 MB run of one character takes a handful of sweeps.
void BpeTokenizer::merge_large(const unsigned char* p, std::size_t n, std::vector<int32_t>& out) const {
    constexpr int kMaxSweeps = 64;
    // One node per part, all fields together: a merge touches one cache line per node.
    // Uninitialised on purpose (every field is written below before it is read).
    struct Node {
        int32_t id;      // -1 once absorbed into its left neighbour
        int32_t next;    // -1 at the end
        int32_t prev;    // -1 at the start
        uint32_t pri;    // priority of the pair (this, next), kNoPriority if none
        int32_t result;  // the token that pair merges into
    };
    std::unique_ptr<Node[]> node(new Node[n]);
    const auto rank_pair = [&](int32_t i) {
        Node& u = node[std::size_t(i)];
        if (u.next < 0 || !pair_lookup(u.id, node[std::size_t(u.next)].id, &u.pri, &u.result)) u.pri = kNoPriority;
    };
    uint32_t lowest = kNoPriority;
    for (std::size_t i = 0; i < n; ++i) {
        const PairValue v = i + 1 < n ? byte_pair(p[i], p[i + 1]) : PairValue{kNoPriority, -1};
        node[i] = Node{byte_token_[p[i]], i + 1 < n ? int32_t(i + 1) : -1, int32_t(i) - 1, v.priority, v.result};
        lowest = std::min(lowest, v.priority);
    }
    const auto merge_at = [&](std::size_t i) {  // node i absorbs its right neighbour
        Node& u = node[i];
        Node& absorbed = node[std::size_t(u.next)];
        u.id = u.result;
        absorbed.id = -1;
        u.next = absorbed.next;
        if (u.next >= 0) node[std::size_t(u.next)].prev = int32_t(i);
        if (u.prev >= 0) rank_pair(u.prev);
        rank_pair(int32_t(i));
    };
    bool use_heap = false;
    for (int sweep = 0; lowest != kNoPriority && !use_heap; ++sweep) {
        if (sweep == kMaxSweeps) {
            use_heap = true;
            break;
        }
        const uint32_t target = lowest;
        lowest = kNoPriority;  // the lowest priority left after this sweep (a stale low value only costs an empty sweep)
        for (int32_t i = 0; i >= 0; i = node[std::size_t(i)].next) {
            const std::size_t u = std::size_t(i);
            if (node[u].pri == target) {
                merge_at(u);
                const uint32_t left = node[u].prev >= 0 ? node[std::size_t(node[u].prev)].pri : kNoPriority;
                if (left <= target || node[u].pri <= target) {
                    use_heap = true;
                    break;
                }
                lowest = std::min(lowest, left);
            }
            lowest = std::min(lowest, node[u].pri);
        }
    }
    if (use_heap) {
        std::vector<uint64_t> heap;
        heap.reserve(n);
        const std::greater<uint64_t> later;  // std heaps are max-heaps: invert for the smallest key on top
        const auto key = [&](int32_t i) { return (uint64_t(node[std::size_t(i)].pri) << 32) | uint32_t(i); };
        for (int32_t i = 0; i >= 0; i = node[std::size_t(i)].next)
            if (node[std::size_t(i)].pri != kNoPriority) heap.push_back(key(i));
        std::make_heap(heap.begin(), heap.end(), later);
        const auto push = [&](int32_t i) {
            if (i >= 0 && node[std::size_t(i)].pri != kNoPriority) {
                heap.push_back(key(i));
                std::push_heap(heap.begin(), heap.end(), later);
            }
        };
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), later);
            const uint64_t k = heap.back();
            heap.pop_back();
            const std::size_t i = uint32_t(k);
            // pri always holds the current pair's priority: a key that disagrees is stale.
            if (node[i].id < 0 || node[i].pri != uint32_t(k >> 32)) continue;
            merge_at(i);
            push(node[i].prev);
            push(int32_t(i));
        }
    }
    for (int32_t i = 0; i >= 0; i = node[std::size_t(i)].next) out.push_back(node[std::size_t(i)].id);
}

// Inlined into encode_ordinary's loop: most pieces end in one of its first two branches.
[[gnu::always_inline]] inline void BpeTokenizer::encode_piece(const unsigned char* p, std::size_t n,
                                                              std::size_t offset, std::vector<int32_t>& out) const {
    if (n == 2 && !ignore_merges_ && byte_token_[p[0]] >= 0 && byte_token_[p[1]] >= 0) {
        // Two bytes are one token exactly when their pair merges: under both rules that is
        // what the whole-piece lookup would find (one small table instead of the big one).
        const PairValue v = byte_pair(p[0], p[1]);
        if (v.priority != kNoPriority) {
            out.push_back(v.result);
        } else {
            out.push_back(byte_token_[p[0]]);
            out.push_back(byte_token_[p[1]]);
        }
        return;
    }
    if (n > 1) {
        const ByteSlot* whole = find_bytes(p, n);
        if (whole && (whole->meta & kWholeOk)) {
            out.push_back(whole->id);
            return;
        }
    } else if (byte_token_[p[0]] >= 0) {
        out.push_back(byte_token_[p[0]]);
        return;
    }
    encode_merged(p, n, offset, out);
}

void BpeTokenizer::encode_merged(const unsigned char* p, std::size_t n, std::size_t offset,
                                 std::vector<int32_t>& out) const {
    for (std::size_t i = 0; i < n; ++i)
        if (byte_token_[p[i]] < 0)
            throw Error(PG_ERR_TOKENIZE, "byte 0x" + std::string(1, "0123456789ABCDEF"[p[i] >> 4]) +
                                             std::string(1, "0123456789ABCDEF"[p[i] & 15]) + " at byte offset " +
                                             std::to_string(offset + i) + " has no token in this BPE vocabulary");
    if (n == 1) out.push_back(byte_token_[p[0]]);
    else if (n < kSmallPiece) merge_small(p, n, out);
    else merge_large(p, n, out);
}

void BpeTokenizer::set_text_rules(bool nfc, std::vector<int32_t> always_matched) {
    std::sort(always_matched.begin(), always_matched.end());
    for (std::size_t i = 0; i < always_matched.size(); ++i) {
        require(is_special(always_matched[i]), PG_ERR_FORMAT,
                "always-matched token id " + std::to_string(always_matched[i]) + " is not a special token");
        require(i == 0 || always_matched[i] != always_matched[i - 1], PG_ERR_FORMAT,
                "always-matched token id " + std::to_string(always_matched[i]) + " is given twice");
    }
    nfc_ = nfc;
    always_matched_ = std::move(always_matched);
}

void BpeTokenizer::set_split_regex(const std::string& regex, const std::string& where) {
    regex_ = std::make_shared<const bpe::SplitRegex>(regex, where);
    pattern_ = bpe::Pattern::kRegex;
}

void BpeTokenizer::set_template(std::vector<int32_t> before, std::vector<int32_t> after) {
    for (const auto* ids : {&before, &after})
        for (int32_t id : *ids)
            require(is_special(id), PG_ERR_FORMAT, "template token id " + std::to_string(id) + " is not a special token");
    template_before_ = std::move(before);
    template_after_ = std::move(after);
}

bool BpeTokenizer::is_always_matched(int32_t id) const {
    return std::binary_search(always_matched_.begin(), always_matched_.end(), id);
}

void BpeTokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
    std::string normalized;
    if (nfc_ && unicode::nfc_may_change(text)) {  // byte offsets in messages are the normalized text's
        normalized = unicode::nfc(text);
        text = normalized;
    }
    std::string prefixed;
    std::size_t shift = 0;  // offsets in messages refer to the caller's text
    if (add_prefix_space_ && !text.empty() && text[0] != ' ') {
        prefixed.reserve(text.size() + 1);
        prefixed.push_back(' ');
        prefixed.append(text);
        text = prefixed;
        shift = 1;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    if (digits_ == DigitSplit::kNone) return encode_pattern_pieces(p, text.size(), 0, shift, out);
    const std::size_t n = text.size();
    std::size_t from = 0;  // the start of the stretch the pattern splits
    for (std::size_t i = 0; i < n;) {
        const bpe::Char c = bpe::decode_char(p + i, p + n);
        if (!bpe::is_number(c.cls)) {
            i += c.len;
            continue;
        }
        encode_pattern_pieces(p + from, i - from, from, shift, out);
        std::size_t end = i + c.len;
        while (digits_ == DigitSplit::kRuns && end < n) {
            const bpe::Char d = bpe::decode_char(p + end, p + n);
            if (!bpe::is_number(d.cls)) break;
            end += d.len;
        }
        encode_piece(p + i, end - i, i >= shift ? i - shift : 0, out);
        from = i = end;
    }
    encode_pattern_pieces(p + from, n - from, from, shift, out);
}

void BpeTokenizer::encode_pattern_pieces(const unsigned char* p, std::size_t n, std::size_t base, std::size_t shift,
                                         std::vector<int32_t>& out) const {
    const auto offset = [&](std::size_t b) { return base + b >= shift ? base + b - shift : 0; };
    if (regex_) {
        std::vector<std::size_t> ends;
        regex_->piece_ends(p, n, ends);
        std::size_t b = 0;
        for (std::size_t e : ends) {
            encode_piece(p + b, e - b, offset(b), out);
            b = e;
        }
        return;
    }
    bpe::for_each_piece(pattern_, p, n, [&](std::size_t b, std::size_t e) { encode_piece(p + b, e - b, offset(b), out); });
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
    if (!always_matched_.empty()) return encode_with_special(text, {}, false);
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    encode_ordinary(text, out);
    return out;
}

std::vector<int32_t> BpeTokenizer::encode_with_special(std::string_view text, const std::vector<int32_t>& allowed,
                                                       bool allow_all) const {
    std::vector<const Token*> active;
    for (const auto& s : specials_)
        if (allow_all || is_always_matched(s.id) || std::find(allowed.begin(), allowed.end(), s.id) != allowed.end())
            active.push_back(&s);
    for (int32_t id : allowed)
        require(is_special(id), PG_ERR_INVALID_ARGUMENT,
                "allowed special token id " + std::to_string(id) + " is not a special token of this tokenizer");
    if (active.empty()) return encode(text);
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    std::vector<std::size_t> next_at(active.size(), 0);  // next occurrence at or after `from`
    std::size_t pos = 0;
    for (std::size_t k = 0; k < active.size(); ++k) next_at[k] = text.find(active[k]->bytes, 0);
    while (pos < text.size()) {
        std::size_t best = std::string_view::npos, best_k = 0;
        for (std::size_t k = 0; k < active.size(); ++k) {
            if (next_at[k] != std::string_view::npos && next_at[k] < pos) next_at[k] = text.find(active[k]->bytes, pos);
            const std::size_t at = next_at[k];
            if (at == std::string_view::npos) continue;
            // leftmost; at the same place the longest
            if (at < best || (at == best && active[k]->bytes.size() > active[best_k]->bytes.size())) best = at, best_k = k;
        }
        if (best == std::string_view::npos) break;
        if (best > pos) encode_ordinary(text.substr(pos, best - pos), out);
        out.push_back(active[best_k]->id);
        pos = best + active[best_k]->bytes.size();
    }
    if (pos < text.size()) encode_ordinary(text.substr(pos), out);
    return out;
}

std::string BpeTokenizer::decode(const int32_t* ids, std::size_t n) const {
    std::string out;
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const int32_t id = ids[i];
        if (id < 0 || id >= vocab_size_ || span_of_[std::size_t(id)].offset == kNoOffset)
            throw Error(PG_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) + " at index " + std::to_string(i) +
                                                     " is not in the BPE vocabulary (ids 0.." +
                                                     std::to_string(vocab_size_ - 1) + ")");
        total += span_of_[std::size_t(id)].length;
    }
    out.reserve(total);
    for (std::size_t i = 0; i < n; ++i) {
        const Span span = span_of_[std::size_t(ids[i])];
        out.append(arena_.data() + span.offset, span.length);
    }
    return out;
}

int64_t BpeTokenizer::token_length(int32_t id) const {
    if (id < 0 || id >= vocab_size_ || span_of_[std::size_t(id)].offset == kNoOffset) return -1;
    return int64_t(span_of_[std::size_t(id)].length);
}

std::vector<BpeTokenizer::Merge> BpeTokenizer::merge_list() const {
    if (!tiktoken_rule_) return merges_;
    // Token of rank r is made by the last merge of its own bytes using ranks below r.
    std::vector<Merge> out;
    out.reserve(tokens_.size());
    for (const auto& t : tokens_) {
        if (t.bytes.size() < 2) continue;
        const auto* p = reinterpret_cast<const unsigned char*>(t.bytes.data());
        // Merge with only the pairs of lower priority: a copy of merge_small's rule with a bound.
        std::vector<int32_t> ids(t.bytes.size());
        for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = byte_token_[p[i]];
        for (;;) {
            std::size_t best = 0;
            uint32_t best_pri = uint32_t(t.id);
            int32_t best_res = -1;
            for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
                uint32_t pr;
                int32_t r;
                if (pair_lookup(ids[i], ids[i + 1], &pr, &r) && pr < best_pri) best_pri = pr, best = i, best_res = r;
            }
            if (best_res < 0) break;
            ids[best] = best_res;
            ids.erase(ids.begin() + std::ptrdiff_t(best) + 1);
        }
        if (ids.size() != 2)
            throw Error(PG_ERR_UNSUPPORTED, "token " + std::to_string(t.id) + " " + describe_bytes(t.bytes) +
                                                " is not the merge of two lower-ranked tokens, so this vocabulary "
                                                "has no merge list");
        out.push_back(Merge{ids[0], ids[1]});
    }
    return out;
}

std::unique_ptr<Tokenizer> BpeTokenizer::clone() const { return std::make_unique<BpeTokenizer>(*this); }

}  // namespace pg
