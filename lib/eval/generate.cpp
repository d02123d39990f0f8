#include "eval/generate.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "tokenizer/utf8_stream.hpp"

namespace pg {

// ------------------------------------------------------------------------------------------
// Sampling
// ------------------------------------------------------------------------------------------

void validate_sample_options(const SampleOptions& o) {
    require(std::isfinite(o.temperature) && o.temperature >= 0.0f, PG_ERR_INVALID_ARGUMENT,
            "temperature " + std::to_string(o.temperature) + " must be finite and >= 0 (0 = greedy)");
    require(o.top_k >= 0, PG_ERR_INVALID_ARGUMENT, "top_k " + std::to_string(o.top_k) + " must be >= 0 (0 = off)");
    require(o.top_p > 0.0f && o.top_p <= 1.0f, PG_ERR_INVALID_ARGUMENT,
            "top_p " + std::to_string(o.top_p) + " must be in (0, 1] (1 = off)");
}

TokenSampler::TokenSampler(int vocab_size, const SampleOptions& options)
    : vocab_(vocab_size), opt_(options), order_(std::size_t(vocab_size)), probs_(std::size_t(vocab_size)) {
    validate_sample_options(options);
}

int32_t TokenSampler::pick(const float* logits, Rng& rng) {
    for (int v = 0; v < vocab_; ++v) {
        if (!std::isfinite(logits[v]))  // (not require(): its message would be built every token)
            throw Error(PG_ERR_STATE, "the model produced a non-finite logit for token " + std::to_string(v) +
                                          " (are its weights finite?)");
    }
    if (opt_.temperature == 0.0f)  // greedy: the first maximum
        return int32_t(std::max_element(logits, logits + vocab_) - logits);

    // Candidates in rank order (logit descending, lower id first on ties) when filtering.
    for (int v = 0; v < vocab_; ++v) order_[std::size_t(v)] = v;
    int n = vocab_;
    const bool top_k_active = opt_.top_k > 0 && opt_.top_k < vocab_;
    const bool top_p_active = opt_.top_p < 1.0f;
    if (top_k_active || top_p_active) {
        auto ranks_before = [logits](int32_t a, int32_t b) {
            return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        };
        if (top_k_active) n = opt_.top_k;
        std::partial_sort(order_.begin(), order_.begin() + n, order_.end(), ranks_before);
    }
    float max_logit = logits[order_[0]];
    for (int i = 1; i < n; ++i) max_logit = std::max(max_logit, logits[order_[std::size_t(i)]]);
    double total = 0.0;
    for (int i = 0; i < n; ++i) {
        const float z = logits[order_[std::size_t(i)]];
        probs_[std::size_t(i)] = std::exp(double(z - max_logit) / double(opt_.temperature));
        total += probs_[std::size_t(i)];
    }
    if (top_p_active) {  // the smallest prefix of the ranked candidates holding top_p of the mass
        double cumulative = 0.0;
        int kept = 0;
        while (kept < n) {
            cumulative += probs_[std::size_t(kept++)];
            if (cumulative >= double(opt_.top_p) * total) break;
        }
        n = kept;
        total = cumulative;
    }
    const double u = rng.uniform() * total;
    double cumulative = 0.0;
    for (int i = 0; i < n; ++i) {
        cumulative += probs_[std::size_t(i)];
        if (u < cumulative) return order_[std::size_t(i)];
    }
    return order_[std::size_t(n - 1)];  // u rounded up to the total
}

// ------------------------------------------------------------------------------------------
// Stop strings
// ------------------------------------------------------------------------------------------

StopStringMatcher::StopStringMatcher(const Tokenizer& tokenizer, std::vector<std::string> stops)
    : tokenizer_(tokenizer), stops_(std::move(stops)) {
    const std::string fn = "stop string ";
    for (std::size_t i = 0; i < stops_.size(); ++i) {
        require(!stops_[i].empty(), PG_ERR_INVALID_ARGUMENT, fn + std::to_string(i) + " is empty");
        const std::string bad = utf8::first_invalid(stops_[i]);
        require(bad.empty(), PG_ERR_INVALID_ARGUMENT, fn + std::to_string(i) + " is not valid UTF-8 (" + bad + ")");
        longest_ = std::max(longest_, stops_[i].size());
    }
    tail_.reserve(4 * longest_ + 64);
}

bool StopStringMatcher::push(int32_t token) {
    pending_ += tokenizer_.decode(&token, 1);
    const std::size_t before = tail_.size();
    tail_ += utf8::take_complete(pending_, false);
    bool found = false;
    for (const std::string& s : stops_) {
        const std::size_t from = before + 1 > s.size() ? before + 1 - s.size() : 0;
        if (tail_.find(s, from) != std::string::npos) found = true;
    }
    // Keep the last longest - 1 bytes: a later match may begin there.
    if (tail_.size() > 2 * longest_ + 32) tail_.erase(0, tail_.size() - (longest_ - 1));
    return found;
}

// ------------------------------------------------------------------------------------------
// The generation loop
// ------------------------------------------------------------------------------------------

std::size_t generate(Session& session, const GenerateOptions& opt, int32_t* out, std::size_t capacity) {
    const Model& model = session.model();
    const ModelConfig& cfg = model.config();
    validate_sample_options(opt.sampling);
    require(opt.max_tokens >= 0, PG_ERR_INVALID_ARGUMENT, "max_tokens " + std::to_string(opt.max_tokens) + " must be >= 0");
    require(session.position() > 0, PG_ERR_STATE,
            "the sequence is empty: append a prompt of at least one token first");
    const Tokenizer* tokenizer = model.tokenizer();
    require(opt.stop_strings.empty() || tokenizer != nullptr, PG_ERR_STATE,
            "stop strings need the model's tokenizer, and the model has none (pg_model_set_tokenizer)");
    std::unique_ptr<StopStringMatcher> stops;
    if (!opt.stop_strings.empty()) stops = std::make_unique<StopStringMatcher>(*tokenizer, opt.stop_strings);
    TokenSampler sampler(cfg.vocab_size, opt.sampling);
    Rng rng(opt.seed);

    std::size_t generated = 0;
    while (generated < std::size_t(opt.max_tokens)) {
        const int32_t token = sampler.pick(session.logits(), rng);
        session.append(&token, 1);
        if (generated < capacity) out[generated] = token;
        ++generated;
        bool stop = opt.on_token && opt.on_token(opt.on_token_user, token) != 0;
        if (stops && stops->push(token)) stop = true;
        if (stop) break;
    }
    return generated;
}

}  // namespace pg
