// The BPE trainer of bpe_trainer.hpp: word counting on threads, then HF BpeTrainer's merge
// loop over flat word arrays.
#include "tokenizer/bpe_trainer.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "tokenizer/bpe_formats.hpp"
#include "tokenizer/utf8.hpp"

namespace pg::bpe {

namespace {

using Pair = uint64_t;  // left id << 32 | right id: numeric order is HF's (left, right) order
Pair make_pair(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
uint32_t left_of(Pair p) { return uint32_t(p >> 32); }
uint32_t right_of(Pair p) { return uint32_t(p); }

struct PairHash {
    std::size_t operator()(Pair p) const {
        p ^= p >> 31;
        p *= 0x7fb5d329728ea185ull;
        p ^= p >> 27;
        return std::size_t(p);
    }
};

// Where a text may be cut without changing its pieces: right after a '\n' that an ASCII
// printable character other than '/' follows. No pattern's piece runs over such a place:
// letter, number and other runs stop at the newline, a whitespace piece stops before the
// printable character, and only o200k's other-run tail [\r\n/]* could take a '/' after it.
bool safe_cut(const std::string_view& t, std::size_t i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    return t[i - 1] == '\n' && c > 0x20 && c < 0x7F && c != '/';
}

// Texts cut into pieces of about `target` bytes at safe places, for the counting threads.
std::vector<std::string_view> cut_texts(const std::vector<std::string_view>& texts, std::size_t target) {
    std::vector<std::string_view> out;
    for (std::string_view t : texts) {
        while (t.size() > 2 * target) {
            std::size_t cut = target;
            while (cut < t.size() && !safe_cut(t, cut)) ++cut;
            if (cut == t.size()) break;
            out.push_back(t.substr(0, cut));
            t.remove_prefix(cut);
        }
        if (!t.empty()) out.push_back(t);
    }
    return out;
}

using WordCounts = std::unordered_map<std::string_view, uint64_t>;

// The pieces of all texts and how often each occurs, sorted by bytes (so that everything after
// is independent of the thread count).
std::vector<std::pair<std::string_view, uint64_t>> count_words(const std::vector<std::string_view>& texts,
                                                               Pattern pattern, ThreadPool& pool) {
    std::size_t total = 0;
    for (const auto& t : texts) total += t.size();
    const std::size_t target = std::max<std::size_t>(1 << 20, total / (8 * std::size_t(pool.size())) + 1);
    const std::vector<std::string_view> parts = cut_texts(texts, target);
    std::vector<WordCounts> per_thread(std::size_t(pool.size()));
    pool.parallel_for(int64_t(parts.size()), [&](int t, int64_t begin, int64_t end) {
        WordCounts& counts = per_thread[std::size_t(t)];
        for (int64_t k = begin; k < end; ++k) {
            const std::string_view text = parts[std::size_t(k)];
            const auto* p = reinterpret_cast<const unsigned char*>(text.data());
            for_each_piece(pattern, p, text.size(),
                           [&](std::size_t b, std::size_t e) { ++counts[text.substr(b, e - b)]; });
        }
    });
    WordCounts& all = per_thread[0];
    for (std::size_t t = 1; t < per_thread.size(); ++t) {
        for (const auto& [word, n] : per_thread[t]) all[word] += n;
        WordCounts().swap(per_thread[t]);
    }
    std::vector<std::pair<std::string_view, uint64_t>> words(all.begin(), all.end());
    std::sort(words.begin(), words.end());
    return words;
}

// A queued pair: its count when queued and the words to merge it in (HF's Merge).
struct Candidate {
    int64_t count;
    Pair pair;
    uint64_t seq;  // queueing order: equal count and pair pop first-queued first
    std::vector<uint32_t> words;
};
struct PopsBefore {  // std heaps put the "largest" on top
    bool operator()(const Candidate& a, const Candidate& b) const {
        if (a.count != b.count) return a.count < b.count;
        if (a.pair != b.pair) return a.pair > b.pair;
        return a.seq > b.seq;
    }
};

struct Change {
    Pair pair;
    int32_t delta;  // -1 or +1 occurrence
    uint32_t word;
};

// All words' symbols back to back; word w is symbols[begin[w], begin[w] + length[w]).
struct Words {
    std::vector<uint32_t> symbols;
    std::vector<uint64_t> begin;
    std::vector<uint32_t> length;
    std::vector<uint64_t> count;

    // HF's Word::merge: left to right, every (a, b) not overlapping an earlier one becomes
    // `merged`; the pairs this removes and makes are appended to `changes`.
    void merge(uint32_t w, uint32_t a, uint32_t b, uint32_t merged, std::vector<Change>& changes) {
        uint32_t* s = symbols.data() + begin[w];
        const uint32_t n = length[w];
        uint32_t out = 0;
        for (uint32_t i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) {
                if (out > 0) {
                    changes.push_back({make_pair(s[out - 1], a), -1, w});
                    changes.push_back({make_pair(s[out - 1], merged), +1, w});
                }
                if (i + 2 < n) {
                    changes.push_back({make_pair(b, s[i + 2]), -1, w});
                    changes.push_back({make_pair(merged, s[i + 2]), +1, w});
                }
                s[out++] = merged;
                i += 2;
            } else {
                s[out++] = s[i++];
            }
        }
        length[w] = out;
    }
};

// HF keys its vocabulary by strings: a merged token by its bytes' byte-level characters, a
// special token by its own text. The two meet when every character of the special token is
// a byte-level character; then the bytes those stand for are the key here (and a merge that
// makes them gets the special token's id, as in HF). Returns false when they never meet.
bool special_as_bytes(const std::string& text, std::string* bytes) {
    bytes->clear();
    for (std::size_t i = 0; i < text.size();) {
        uint32_t cp;
        int len;
        if (utf8::decode_at(text, i, &cp, &len) != nullptr) return false;
        i += std::size_t(len);
        int byte = -1;
        for (int b = 0; b < 256 && byte < 0; ++b)
            if (byte_to_unicode(uint8_t(b)) == cp) byte = b;
        if (byte < 0) return false;
        bytes->push_back(char(byte));
    }
    return true;
}

}  // namespace

std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string_view>& texts, const TrainOptions& options) {
    const int64_t n_special = int64_t(options.special_tokens.size());
    if (options.vocab_size < 256 + n_special || options.vocab_size > int32_t(BpeTokenizer::kMaxVocab))
        throw Error(PG_ERR_INVALID_ARGUMENT, "vocab_size " + std::to_string(options.vocab_size) + " is outside " +
                                                 std::to_string(256 + n_special) + ".." +
                                                 std::to_string(BpeTokenizer::kMaxVocab) +
                                                 " (256 bytes + the special tokens at least)");
    if (options.min_frequency < 0)
        throw Error(PG_ERR_INVALID_ARGUMENT,
                    "min_frequency " + std::to_string(options.min_frequency) + " is negative");
    std::unordered_map<std::string, uint32_t> id_of;  // token bytes -> id (HF's word_to_id)
    std::vector<BpeTokenizer::Token> specials;
    std::vector<std::string> bytes_of;  // id -> bytes (a special token's: what merges would need, or empty)
    int64_t n_tokens = 0;               // distinct entries of the vocabulary
    for (const auto& s : options.special_tokens) {
        const std::string which = "special token " + std::to_string(specials.size());
        if (s.empty()) throw Error(PG_ERR_INVALID_ARGUMENT, which + " is empty");
        for (const auto& earlier : specials)
            if (earlier.bytes == s) throw Error(PG_ERR_INVALID_ARGUMENT, which + " \"" + s + "\" is given twice");
        std::string key;
        if (!special_as_bytes(s, &key)) key.clear();
        if (key.size() == 1)
            throw Error(PG_ERR_INVALID_ARGUMENT, which + " \"" + s + "\" is the byte-level character of a single byte, "
                                                 "which is already a token");
        if (!key.empty() && !id_of.emplace(key, uint32_t(specials.size())).second)
            throw Error(PG_ERR_INVALID_ARGUMENT, which + " \"" + s + "\" stands for the same bytes as an earlier one");
        specials.push_back({int32_t(specials.size()), s});
        bytes_of.push_back(key);
        ++n_tokens;
    }
    // The bytes in the order of their byte-level characters, as HF sorts its alphabet.
    std::vector<uint32_t> byte_order(256);
    for (uint32_t b = 0; b < 256; ++b) byte_order[b] = b;
    std::sort(byte_order.begin(), byte_order.end(),
              [](uint32_t x, uint32_t y) { return byte_to_unicode(uint8_t(x)) < byte_to_unicode(uint8_t(y)); });
    uint32_t id_of_byte[256];
    for (uint32_t b : byte_order) {
        const std::string s(1, char(b));
        id_of_byte[b] = uint32_t(bytes_of.size());
        id_of.emplace(s, id_of_byte[b]);
        bytes_of.push_back(s);
        ++n_tokens;
    }

    ThreadPool pool(options.n_threads);
    const auto word_counts = count_words(texts, options.pattern, pool);

    Words words;
    words.begin.reserve(word_counts.size());
    for (const auto& [word, n] : word_counts) {
        words.begin.push_back(words.symbols.size());
        words.length.push_back(uint32_t(word.size()));
        words.count.push_back(n);
        for (unsigned char c : word) words.symbols.push_back(id_of_byte[c]);
    }

    // Initial pair counts and the words each pair is in (HF's count_pairs).
    std::unordered_map<Pair, int64_t, PairHash> pair_count;
    std::unordered_map<Pair, std::vector<uint32_t>, PairHash> where;
    for (uint32_t w = 0; w < words.count.size(); ++w) {
        const uint32_t* s = words.symbols.data() + words.begin[w];
        for (uint32_t i = 0; i + 1 < words.length[w]; ++i) {
            const Pair p = make_pair(s[i], s[i + 1]);
            pair_count[p] += int64_t(words.count[w]);
            auto& in = where[p];
            if (in.empty() || in.back() != w) in.push_back(w);
        }
    }
    std::vector<Candidate> queue;  // a heap by PopsBefore
    const PopsBefore pops_before;
    const auto push = [&](Candidate c) {
        queue.push_back(std::move(c));
        std::push_heap(queue.begin(), queue.end(), pops_before);
    };
    uint64_t seq = 0;
    const auto enqueue_where = [&] {
        // In pair order, so that the sequence numbers do not depend on hash order.
        std::vector<std::pair<Pair, std::vector<uint32_t>>> fresh(std::make_move_iterator(where.begin()),
                                                                 std::make_move_iterator(where.end()));
        where.clear();
        std::sort(fresh.begin(), fresh.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (auto& [pair, in] : fresh) {
            const int64_t count = pair_count[pair];
            if (count > 0) push(Candidate{count, pair, seq++, std::move(in)});
        }
    };
    enqueue_where();

    std::vector<std::pair<Pair, uint32_t>> merges;  // (pair, token), in merge order, repeats included
    std::vector<std::vector<Change>> changes_of(std::size_t(pool.size()));
    std::vector<Change> changes;
    constexpr std::size_t kParallelWords = 2048;  // below this a merge runs on the calling thread
    while (n_tokens < options.vocab_size && !queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), pops_before);
        Candidate top = std::move(queue.back());
        queue.pop_back();
        const int64_t current = pair_count[top.pair];
        if (top.count != current) {  // stale: queue again with the count it has now
            top.count = current;
            top.seq = seq++;
            push(std::move(top));
            continue;
        }
        if (top.count < 1 || top.count < options.min_frequency) break;
        const uint32_t a = left_of(top.pair), b = right_of(top.pair);
        const std::string joined = bytes_of[a] + bytes_of[b];
        auto found = id_of.find(joined);
        uint32_t token;
        if (found != id_of.end()) {
            token = found->second;
        } else {
            token = uint32_t(bytes_of.size());
            id_of.emplace(joined, token);
            bytes_of.push_back(joined);
            ++n_tokens;
        }
        merges.emplace_back(top.pair, token);

        // Merge it in its words (on the pool when there are many), then apply the changes in
        // word-chunk order.
        changes.clear();
        if (top.words.size() < kParallelWords || pool.size() == 1) {
            for (uint32_t w : top.words) words.merge(w, a, b, token, changes);
        } else {
            pool.parallel_for(int64_t(top.words.size()), [&](int t, int64_t begin, int64_t end) {
                auto& mine = changes_of[std::size_t(t)];
                mine.clear();
                for (int64_t k = begin; k < end; ++k) words.merge(top.words[std::size_t(k)], a, b, token, mine);
            });
            for (const auto& mine : changes_of) changes.insert(changes.end(), mine.begin(), mine.end());
        }
        for (const Change& c : changes) {
            pair_count[c.pair] += int64_t(c.delta) * int64_t(words.count[c.word]);
            if (c.delta > 0) {
                auto& in = where[c.pair];
                if (in.empty() || in.back() != c.word) in.push_back(c.word);
            }
        }
        enqueue_where();
        if (options.progress && !options.progress(n_tokens, options.vocab_size))
            throw Error(PG_ERR_CANCELLED, "BPE training cancelled by the progress callback after " +
                                              std::to_string(merges.size()) + " merges");
    }

    // The merge list with a repeated pair at its last place (HF keeps the last rank).
    std::unordered_map<Pair, std::size_t, PairHash> last;
    for (std::size_t i = 0; i < merges.size(); ++i) last[merges[i].first] = i;
    std::vector<BpeTokenizer::Merge> merge_list;
    for (std::size_t i = 0; i < merges.size(); ++i)
        if (last[merges[i].first] == i)
            merge_list.push_back({int32_t(left_of(merges[i].first)), int32_t(right_of(merges[i].first))});
    std::vector<BpeTokenizer::Token> vocab;
    for (std::size_t id = specials.size(); id < bytes_of.size(); ++id) vocab.push_back({int32_t(id), bytes_of[id]});
    // A merged token with a special token's bytes has that id (HF reuses it): list it as an
    // ordinary token too (same bytes) so that its merges resolve.
    for (const auto& m : merges) {
        if (m.second >= specials.size()) continue;
        const auto& special = specials[m.second];
        if (bytes_of[m.second] != special.bytes)
            throw Error(PG_ERR_UNSUPPORTED, "training made the bytes that special token \"" + special.bytes +
                                                "\" stands for in HF's byte-level alphabet; one id for two byte "
                                                "strings is not a tokenizer this library can hold");
        vocab.push_back({special.id, special.bytes});
    }
    std::sort(vocab.begin(), vocab.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
    vocab.erase(std::unique(vocab.begin(), vocab.end(), [](const auto& x, const auto& y) { return x.id == y.id; }),
                vocab.end());
    return BpeTokenizer::from_merges(options.pattern, std::move(vocab), merge_list, std::move(specials), false, false);
}

}  // namespace pg::bpe
