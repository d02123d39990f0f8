#include "eval/generate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "kernels/dispatch.hpp"
#include "model/params.hpp"

namespace pg {

// ------------------------------------------------------------------------------------------
// The cached forward
// ------------------------------------------------------------------------------------------

KvCacheForward::KvCacheForward(const Model& model, int slide_keep, int n_threads)
    : model_(model), cfg_(model.config()), slide_keep_(slide_keep), pool_(n_threads) {
    require(slide_keep >= 1 && slide_keep <= cfg_.n_ctx, PG_ERR_INVALID_ARGUMENT,
            "KvCacheForward: slide_keep " + std::to_string(slide_keep) + " is outside [1, n_ctx = " +
                std::to_string(cfg_.n_ctx) + "]");
    const std::size_t T = std::size_t(cfg_.n_ctx), C = std::size_t(cfg_.n_embd);
    window_.assign(T, 0);
    const std::size_t cache = std::size_t(cfg_.n_layer) * T * C;  // all heads of all layers
    k_cache_.resize(cache);
    v_cache_.resize(cache);
    x_.resize(T * C);
    ln_.resize(T * C);
    qkv_.resize(T * 3 * C);
    att_out_.resize(T * C);
    proj_.resize(T * C);
    fc_.resize(T * 4 * C);
    fc_gelu_.resize(T * 4 * C);
    mean_.resize(T);
    rstd_.resize(T);
    scores_.resize(T * T);  // one head's attention scores for up to n_ctx rows
    logits_.resize(std::size_t(cfg_.vocab_size));
}

void KvCacheForward::start(const int32_t* tokens, std::size_t n) {
    require(n >= 1, PG_ERR_INVALID_ARGUMENT, "generation needs at least one prompt token");
    const std::size_t keep = std::min<std::size_t>(n, std::size_t(cfg_.n_ctx));
    std::copy(tokens + (n - keep), tokens + n, window_.begin());
    length_ = int(keep);
    slides_ = 0;
    compute(0);
}

void KvCacheForward::append(int32_t token) {
    if (length_ < cfg_.n_ctx) {
        window_[std::size_t(length_++)] = token;
        compute(length_ - 1);
        return;
    }
    // Full window: keep the last slide_keep tokens of the sequence (the new one included) at
    // positions 0..slide_keep-1 and rebuild every position of the cache.
    const int kept_old = slide_keep_ - 1;
    std::memmove(window_.data(), window_.data() + (length_ - kept_old), std::size_t(kept_old) * sizeof(int32_t));
    window_[std::size_t(kept_old)] = token;
    length_ = slide_keep_;
    ++slides_;
    compute(0);
}

void KvCacheForward::linear(float* out, const float* in, const float* W, const float* b, int rows,
                            int n_in, int n_out) {
    if (rows == 1) {
        // One row: a matrix-vector product, each output one dot product over a weight row.
        for (int o = 0; o < n_out; ++o) out[o] = kernels::dot(W + std::size_t(o) * n_in, in, n_in) + b[o];
        return;
    }
    kernels::GemmArgs g = kernels::gemm_args(false, true, rows, n_out, n_in, in, n_in, W, n_in, out, n_out);
    g.bias = b;
    kernels::sgemm_parallel(g, pool_);
}

void KvCacheForward::attend_step(const float* k_layer, const float* v_layer, int pos) {
    const int hs = cfg_.head_dim(), n_ctx = cfg_.n_ctx;
    const float scale = 1.0f / std::sqrt(float(hs));
    float* scores = scores_.data();
    for (int h = 0; h < cfg_.n_head; ++h) {
        const float* q = qkv_.data() + h * hs;
        const float* keys = k_layer + std::size_t(h) * n_ctx * hs;    // [n_ctx, hs]
        const float* values = v_layer + std::size_t(h) * n_ctx * hs;  // [n_ctx, hs]
        for (int s = 0; s <= pos; ++s) scores[s] = kernels::dot(q, keys + std::size_t(s) * hs, hs) * scale;
        kernels::softmax(scores, scores, pos + 1);
        float* y = att_out_.data() + h * hs;
        std::fill(y, y + hs, 0.0f);
        for (int s = 0; s <= pos; ++s) kernels::axpy(y, scores[s], values + std::size_t(s) * hs, hs);
    }
}

void KvCacheForward::attend_rows(const float* k_layer, const float* v_layer, int first, int rows) {
    const int C = cfg_.n_embd, hs = cfg_.head_dim(), n_ctx = cfg_.n_ctx;
    const int len = first + rows;  // keys 0..len-1; row r sees keys 0..first+r
    float* scores = scores_.data();  // [rows, len]
    for (int h = 0; h < cfg_.n_head; ++h) {
        // scores = scale * Q_h K_h^T                                 [rows, len]
        kernels::sgemm_parallel(kernels::gemm_args(false, true, rows, len, hs, qkv_.data() + h * hs, 3 * C,
                                                   k_layer + std::size_t(h) * n_ctx * hs, hs, scores, len,
                                                   1.0f / std::sqrt(float(hs))),
                                pool_);
        // Causal softmax: row r over its first first+r+1 keys; the later ones get weight 0.
        pool_.parallel_for(rows, [&](int, int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                float* row = scores + r * len;
                const int visible = first + int(r) + 1;
                kernels::softmax(row, row, visible);
                std::fill(row + visible, row + len, 0.0f);
            }
        });
        // y_h = P V_h                                                [rows, hs], into att_out
        kernels::sgemm_parallel(kernels::gemm_args(false, false, rows, hs, len, scores, len,
                                                   v_layer + std::size_t(h) * n_ctx * hs, hs,
                                                   att_out_.data() + h * hs, C),
                                pool_);
    }
}

void KvCacheForward::compute(int first) {
    const int C = cfg_.n_embd, H = cfg_.n_head, hs = cfg_.head_dim(), n_ctx = cfg_.n_ctx;
    int rows = length_ - first;
    std::size_t RC = std::size_t(rows) * C;
    const GptTensors<const float> w = bind_tensors(model_.layout(), model_.params());
    const float eps = cfg_.layernorm_eps;
    float* x = x_.data();

    // x[r] = wte[token] + wpe[position]                                   x: [rows, C]
    for (int r = 0; r < rows; ++r) {
        const int pos = first + r;
        const float* te = w.wte + std::size_t(window_[std::size_t(pos)]) * C;
        const float* pe = w.wpe + std::size_t(pos) * C;
        float* xr = x + std::size_t(r) * C;
        for (int i = 0; i < C; ++i) xr[i] = te[i] + pe[i];
    }

    for (int l = 0; l < cfg_.n_layer; ++l) {
        const std::size_t lc = std::size_t(l) * C;
        float* k_layer = k_cache_.data() + std::size_t(l) * n_ctx * C;  // [H, n_ctx, hs]
        float* v_layer = v_cache_.data() + std::size_t(l) * n_ctx * C;

        // Attention half: ln_1, qkv [rows, 3C], new keys/values into the cache.
        kernels::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, w.ln1w + lc, w.ln1b + lc, rows, C, eps);
        linear(qkv_.data(), ln_.data(), w.qkvw + lc * 3 * C, w.qkvb + lc * 3, rows, C, 3 * C);
        for (int r = 0; r < rows; ++r) {
            const float* q = qkv_.data() + std::size_t(r) * 3 * C;
            const std::size_t pos = std::size_t(first + r);
            for (int h = 0; h < H; ++h) {
                const std::size_t at = (std::size_t(h) * n_ctx + pos) * hs;
                std::memcpy(k_layer + at, q + C + h * hs, std::size_t(hs) * sizeof(float));
                std::memcpy(v_layer + at, q + 2 * C + h * hs, std::size_t(hs) * sizeof(float));
            }
        }
        // The last layer's outputs matter only for the last position (the only one that
        // predicts), once every row's keys and values are cached: continue with that row alone.
        if (l == cfg_.n_layer - 1 && rows > 1) {
            std::memmove(qkv_.data(), qkv_.data() + std::size_t(rows - 1) * 3 * C, std::size_t(3 * C) * sizeof(float));
            std::memmove(x, x + std::size_t(rows - 1) * C, std::size_t(C) * sizeof(float));
            first += rows - 1;
            rows = 1;
            RC = std::size_t(C);
        }
        // Causal attention of each new row over the cached positions 0..its own.
        if (rows == 1)
            attend_step(k_layer, v_layer, first);
        else
            attend_rows(k_layer, v_layer, first, rows);
        linear(proj_.data(), att_out_.data(), w.attprojw + lc * C, w.attprojb + lc, rows, C, C);
        kernels::axpy(x, 1.0f, proj_.data(), int64_t(RC));

        // MLP half: ln_2, fc [rows, 4C], GELU, projection back to C, residual.
        kernels::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x, w.ln2w + lc, w.ln2b + lc, rows, C, eps);
        linear(fc_.data(), ln_.data(), w.fcw + lc * 4 * C, w.fcb + lc * 4, rows, C, 4 * C);
        kernels::gelu_forward(fc_gelu_.data(), fc_.data(), int64_t(RC) * 4);
        linear(proj_.data(), fc_gelu_.data(), w.fcprojw + lc * 4 * C, w.fcprojb + lc, rows, 4 * C, C);
        kernels::axpy(x, 1.0f, proj_.data(), int64_t(RC));
    }

    // Only the last position predicts: ln_f on its row, then the tied head over the real
    // vocabulary (padding rows of wte are never predicted).
    const float* last = x + std::size_t(rows - 1) * C;
    kernels::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), last, w.lnfw, w.lnfb, 1, C, eps);
    for (int v = 0; v < cfg_.vocab_size; ++v)
        logits_[std::size_t(v)] = kernels::dot(ln_.data(), w.wte + std::size_t(v) * C, C);
}

// ------------------------------------------------------------------------------------------
// Sampling
// ------------------------------------------------------------------------------------------

void validate_sample_options(const SampleOptions& o, const char* function) {
    const std::string fn = std::string(function) + ": ";
    require(std::isfinite(o.temperature) && o.temperature >= 0.0f, PG_ERR_INVALID_ARGUMENT,
            fn + "temperature " + std::to_string(o.temperature) + " must be finite and >= 0 (0 = greedy)");
    require(o.top_k >= 0, PG_ERR_INVALID_ARGUMENT, fn + "top_k " + std::to_string(o.top_k) + " must be >= 0 (0 = off)");
    require(o.top_p > 0.0f && o.top_p <= 1.0f, PG_ERR_INVALID_ARGUMENT,
            fn + "top_p " + std::to_string(o.top_p) + " must be in (0, 1] (1 = off)");
}

TokenSampler::TokenSampler(int vocab_size, const SampleOptions& options)
    : vocab_(vocab_size), opt_(options), order_(std::size_t(vocab_size)), probs_(std::size_t(vocab_size)) {
    validate_sample_options(options, "TokenSampler");
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
// The generation loop
// ------------------------------------------------------------------------------------------

std::size_t generate(const Model& model, const int32_t* prompt, std::size_t n_prompt,
                     const GenerateOptions& opt, int32_t* out, std::size_t capacity) {
    const ModelConfig& cfg = model.config();
    validate_sample_options(opt.sampling, "pg_generate");
    require(opt.max_tokens >= 0, PG_ERR_INVALID_ARGUMENT,
            "pg_generate: max_tokens " + std::to_string(opt.max_tokens) + " must be >= 0");
    require(opt.slide_keep >= 0 && opt.slide_keep <= cfg.n_ctx, PG_ERR_INVALID_ARGUMENT,
            "pg_generate: slide_keep " + std::to_string(opt.slide_keep) + " is outside [0, n_ctx = " +
                std::to_string(cfg.n_ctx) + "] (0 = n_ctx)");
    const Tokenizer* tokenizer = model.tokenizer();
    std::size_t longest_stop = 0;
    for (std::size_t i = 0; i < opt.stop_strings.size(); ++i) {
        require(!opt.stop_strings[i].empty(), PG_ERR_INVALID_ARGUMENT,
                "pg_generate: stop string " + std::to_string(i) + " is empty");
        longest_stop = std::max(longest_stop, opt.stop_strings[i].size());
    }
    require(opt.stop_strings.empty() || tokenizer != nullptr, PG_ERR_STATE,
            "pg_generate: stop strings need the model's tokenizer, and the model has none "
            "(pg_model_set_tokenizer)");
    TokenSampler sampler(cfg.vocab_size, opt.sampling);
    KvCacheForward forward(model, opt.slide_keep ? opt.slide_keep : cfg.n_ctx, opt.n_threads);
    Rng rng(opt.seed);
    // The generated text's tail, searched for stop strings after each token.
    std::string tail;
    tail.reserve(4 * longest_stop + 64);

    forward.start(prompt, n_prompt);
    std::size_t generated = 0;
    while (generated < std::size_t(opt.max_tokens)) {
        const int32_t token = sampler.pick(forward.logits(), rng);
        if (generated < capacity) out[generated] = token;
        ++generated;
        bool stop = opt.on_token && opt.on_token(opt.on_token_user, token) != 0;
        if (longest_stop > 0) {
            const std::size_t before = tail.size();
            tail += tokenizer->decode(&token, 1);
            // A match completed by this token ends inside the bytes it added (earlier matches
            // would have stopped generation already).
            for (const std::string& s : opt.stop_strings) {
                const std::size_t from = before + 1 > s.size() ? before + 1 - s.size() : 0;
                if (tail.find(s, from) != std::string::npos) stop = true;
            }
            if (tail.size() > 2 * longest_stop + 32) tail.erase(0, tail.size() - (longest_stop - 1));
        }
        if (stop || generated == std::size_t(opt.max_tokens)) break;
        forward.append(token);
    }
    return generated;
}

}  // namespace pg
