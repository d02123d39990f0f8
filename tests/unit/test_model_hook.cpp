// The linear hook (model/linear_hook.hpp) and the frozen-base backward, with a real low-rank
// hook (out += in A^T B^T per layer and kind, LoRA's shape without its scale): a model with the
// hook is the plain model with merged weights W + B A, so its loss and base gradients equal the
// merged model's, and the hook's gradients follow from the merged model's weight gradients
// (dB = dW' A^T, dA = B^T dW'). A frozen base (no gradient buffer) runs no weight-gradient
// product and gives the hook bit-identical gradients.
#include <catch2/catch.hpp>

#include <functional>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/linear_hook.hpp"
#include "model/params.hpp"
#include "model_test_params.hpp"

namespace {

// One A [r, n_in] and B [n_out, r] per layer and kind, with their gradients. Plain loops: this
// is the test's truth, not a fast path.
class LowRankHook : public pg::LinearHook {
public:
    struct Pair {
        int n_in = 0, n_out = 0;
        std::vector<float> A, B, dA, dB;
    };

    LowRankHook(const pg::ModelConfig& cfg, int rank, uint64_t seed) : rank_(rank), layers_(cfg.n_layer) {
        pg::Rng rng(seed);
        const int C = cfg.n_embd;
        const int dims[pg::kNumLinearKinds][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
        pairs_.resize(size_t(layers_) * pg::kNumLinearKinds);
        for (int l = 0; l < layers_; ++l)
            for (int k = 0; k < pg::kNumLinearKinds; ++k) {
                Pair& p = pair(l, pg::LinearKind(k));
                p.n_in = dims[k][0];
                p.n_out = dims[k][1];
                p.A.resize(size_t(rank) * p.n_in);
                p.B.resize(size_t(p.n_out) * rank);
                for (float& a : p.A) a = float(rng.uniform() - 0.5) * 0.4f;
                for (float& b : p.B) b = float(rng.uniform() - 0.5) * 0.4f;
                p.dA.assign(p.A.size(), 0.0f);
                p.dB.assign(p.B.size(), 0.0f);
            }
    }

    Pair& pair(int layer, pg::LinearKind kind) { return pairs_[size_t(layer) * pg::kNumLinearKinds + int(kind)]; }
    int rank() const { return rank_; }
    int64_t calls = 0;

    // Which linears the hook adapts (all unless restricted).
    std::function<bool(int, pg::LinearKind)> only;
    bool adapts(int layer, pg::LinearKind kind) const override { return !only || only(layer, kind); }

    void forward(int layer, pg::LinearKind kind, const float* in, int64_t rows, int n_in, float* out, int n_out,
                 const pg::LinearHookContext& ctx) override {
        ++calls;
        if (ctx.overwrite) std::fill(out, out + rows * n_out, 0.0f);
        Pair& p = pair(layer, kind);
        REQUIRE(p.n_in == n_in);
        REQUIRE(p.n_out == n_out);
        std::vector<double> h(static_cast<size_t>(rank_));
        for (int64_t r = 0; r < rows; ++r) {
            for (int j = 0; j < rank_; ++j) {  // h = in A^T
                double s = 0.0;
                for (int i = 0; i < n_in; ++i) s += double(in[r * n_in + i]) * p.A[size_t(j) * n_in + i];
                h[size_t(j)] = s;
            }
            for (int o = 0; o < n_out; ++o) {  // out += h B^T
                double s = 0.0;
                for (int j = 0; j < rank_; ++j) s += h[size_t(j)] * p.B[size_t(o) * rank_ + j];
                out[r * n_out + o] += float(s);
            }
        }
    }

    void backward(int layer, pg::LinearKind kind, const float* in, const float* dout, int64_t rows, int n_in,
                  float* din, int n_out, const pg::LinearHookContext& ctx) override {
        Pair& p = pair(layer, kind);
        // din may be in itself when overwriting: the term is computed whole before it is written.
        std::vector<float> term(size_t(rows) * n_in, 0.0f);
        std::vector<double> h(static_cast<size_t>(rank_)), dh(static_cast<size_t>(rank_));
        for (int64_t r = 0; r < rows; ++r) {
            for (int j = 0; j < rank_; ++j) {
                double s = 0.0, ds = 0.0;
                for (int i = 0; i < n_in; ++i) s += double(in[r * n_in + i]) * p.A[size_t(j) * n_in + i];
                for (int o = 0; o < n_out; ++o) ds += double(dout[r * n_out + o]) * p.B[size_t(o) * rank_ + j];
                h[size_t(j)] = s;
                dh[size_t(j)] = ds;
            }
            for (int o = 0; o < n_out; ++o)  // dB += dout^T h
                for (int j = 0; j < rank_; ++j) p.dB[size_t(o) * rank_ + j] += float(dout[r * n_out + o] * h[size_t(j)]);
            for (int j = 0; j < rank_; ++j)  // dA += dh^T in;  din += dh A
                for (int i = 0; i < n_in; ++i) {
                    p.dA[size_t(j) * n_in + i] += float(dh[size_t(j)] * in[r * n_in + i]);
                    term[size_t(r) * n_in + i] += float(dh[size_t(j)] * p.A[size_t(j) * n_in + i]);
                }
        }
        if (!din) return;  // not wanted: nothing below reads it
        for (size_t i = 0; i < term.size(); ++i) din[i] = ctx.overwrite ? term[i] : din[i] + term[i];
    }

private:
    int rank_, layers_;
    std::vector<Pair> pairs_;
};

pg::ModelConfig hook_config() {
    pg::ModelConfig cfg;
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 16;
    cfg.n_ctx = 16;
    cfg.vocab_size = 11;
    cfg.padded_vocab_size = 12;
    return cfg;
}

constexpr int kB = 3, kT = 13;

struct Batch {
    std::vector<int32_t> inputs, targets;
};

Batch random_batch(const pg::ModelConfig& cfg, uint64_t seed) {
    pg::Rng rng(seed);
    Batch b;
    for (int i = 0; i < kB * kT; ++i) {
        b.inputs.push_back(int32_t(rng.below(uint64_t(cfg.vocab_size))));
        b.targets.push_back(i % 5 == 2 ? -1 : int32_t(rng.below(uint64_t(cfg.vocab_size))));
    }
    return b;
}

// The stacked weight tensor and per-layer size behind each kind.
pg::ParamKind weight_of(pg::LinearKind kind) {
    switch (kind) {
        case pg::LinearKind::attn_qkv: return pg::kQkvw;
        case pg::LinearKind::attn_proj: return pg::kAttprojw;
        case pg::LinearKind::mlp_fc: return pg::kFcw;
        case pg::LinearKind::mlp_proj: return pg::kFcprojw;
    }
    return pg::kQkvw;
}

// W + B A for every layer and kind.
std::vector<float> merged(const pg::ModelConfig& cfg, std::vector<float> params, LowRankHook& hook) {
    const pg::ParamLayout layout(cfg);
    for (int l = 0; l < cfg.n_layer; ++l)
        for (int k = 0; k < pg::kNumLinearKinds; ++k) {
            LowRankHook::Pair& p = hook.pair(l, pg::LinearKind(k));
            float* W = params.data() + layout.offset[weight_of(pg::LinearKind(k))] + int64_t(l) * p.n_out * p.n_in;
            for (int o = 0; o < p.n_out; ++o)
                for (int i = 0; i < p.n_in; ++i) {
                    double s = 0.0;
                    for (int j = 0; j < hook.rank(); ++j)
                        s += double(p.B[size_t(o) * hook.rank() + j]) * p.A[size_t(j) * p.n_in + i];
                    W[o * p.n_in + i] += float(s);
                }
        }
    return params;
}

void check_close(const float* got, const float* want, int64_t n, double rel, const char* what) {
    double scale = 1e-30, worst = 0.0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, double(std::fabs(want[i])));
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / scale);
    INFO(what << ": worst error relative to the largest entry = " << worst);
    CHECK(worst <= rel);
}

pg::Dropout no_dropout() { return pg::Dropout{}; }

}  // namespace

TEST_CASE("linear hook: a low-rank hook is the merged model, in loss and every gradient", "[model][hook]") {
    const pg::ModelConfig cfg = hook_config();
    const pg::ParamLayout layout(cfg);
    const std::vector<float> params = pg_test::random_model_params<float>(cfg, 5, 0.3);
    const Batch batch = random_batch(cfg, 21);
    const float scale = 0.5f;
    for (const bool recompute : {false, true})
        for (const int threads : {1, 2}) {
            INFO("recompute " << recompute << ", threads " << threads);
            pg::ThreadPool pool(threads);
            pg::EngineOptions options;
            options.recompute = recompute;
            LowRankHook hook(cfg, 2, 77);
            pg::Engine hooked(cfg, kB, kT, options), plain(cfg, kB, kT, options);
            hooked.set_linear_hook(&hook);
            REQUIRE(hooked.linear_hook() == &hook);

            const std::vector<float> merged_params = merged(cfg, params, hook);
            std::vector<float> g_hooked(size_t(layout.total), 0.0f), g_merged(size_t(layout.total), 0.0f);
            const pg::LossSum a = hooked.forward_backward(params.data(), g_hooked.data(), batch.inputs.data(),
                                                          batch.targets.data(), kB, kT, scale, no_dropout(), pool);
            const pg::LossSum b = plain.forward_backward(merged_params.data(), g_merged.data(), batch.inputs.data(),
                                                         batch.targets.data(), kB, kT, scale, no_dropout(), pool);
            CHECK(a.count == b.count);
            CHECK(std::fabs(a.sum - b.sum) <= 1e-5 * std::fabs(b.sum));
            for (int kind = 0; kind < pg::kNumParamKinds; ++kind)
                check_close(g_hooked.data() + layout.offset[kind], g_merged.data() + layout.offset[kind],
                            layout.size[kind], 1e-4, pg_test::param_kind_name(kind));
            // The hook's own gradients: dB = dW' A^T, dA = B^T dW'.
            for (int l = 0; l < cfg.n_layer; ++l)
                for (int k = 0; k < pg::kNumLinearKinds; ++k) {
                    LowRankHook::Pair& p = hook.pair(l, pg::LinearKind(k));
                    const float* dW = g_merged.data() + layout.offset[weight_of(pg::LinearKind(k))] +
                                      int64_t(l) * p.n_out * p.n_in;
                    std::vector<float> want_dA(p.dA.size()), want_dB(p.dB.size());
                    for (int o = 0; o < p.n_out; ++o)
                        for (int j = 0; j < hook.rank(); ++j) {
                            double s = 0.0;
                            for (int i = 0; i < p.n_in; ++i) s += double(dW[o * p.n_in + i]) * p.A[size_t(j) * p.n_in + i];
                            want_dB[size_t(o) * hook.rank() + j] = float(s);
                        }
                    for (int j = 0; j < hook.rank(); ++j)
                        for (int i = 0; i < p.n_in; ++i) {
                            double s = 0.0;
                            for (int o = 0; o < p.n_out; ++o) s += double(p.B[size_t(o) * hook.rank() + j]) * dW[o * p.n_in + i];
                            want_dA[size_t(j) * p.n_in + i] = float(s);
                        }
                    INFO("layer " << l << " " << pg::linear_kind_name(pg::LinearKind(k)));
                    check_close(p.dA.data(), want_dA.data(), int64_t(p.dA.size()), 1e-4, "dA");
                    check_close(p.dB.data(), want_dB.data(), int64_t(p.dB.size()), 1e-4, "dB");
                }

            // Forward only (evaluation): the same logits as the merged model.
            std::vector<float> logits_hooked(size_t(kB) * kT * cfg.vocab_size), logits_merged(logits_hooked.size());
            hooked.forward(params.data(), batch.inputs.data(), nullptr, kB, kT, nullptr, logits_hooked.data(), pool);
            plain.forward(merged_params.data(), batch.inputs.data(), nullptr, kB, kT, nullptr, logits_merged.data(), pool);
            check_close(logits_hooked.data(), logits_merged.data(), int64_t(logits_hooked.size()), 1e-5, "logits");
        }
}

TEST_CASE("linear hook: every linear layer of every block calls it, in every pass", "[model][hook]") {
    const pg::ModelConfig cfg = hook_config();
    const std::vector<float> params = pg_test::random_model_params<float>(cfg, 5, 0.3);
    const Batch batch = random_batch(cfg, 22);
    pg::ThreadPool pool(1);
    LowRankHook hook(cfg, 1, 3);
    pg::Engine engine(cfg, kB, kT);
    engine.set_linear_hook(&hook);
    engine.forward(params.data(), batch.inputs.data(), batch.targets.data(), kB, kT, nullptr, nullptr, pool);
    CHECK(hook.calls == int64_t(pg::kNumLinearKinds) * cfg.n_layer);
    engine.set_linear_hook(nullptr);  // detached: the plain model again
    engine.forward(params.data(), batch.inputs.data(), batch.targets.data(), kB, kT, nullptr, nullptr, pool);
    CHECK(hook.calls == int64_t(pg::kNumLinearKinds) * cfg.n_layer);
}

// One forward_backward with the base trained and one with it frozen, the same hook layout
// (`only`, null: every linear) on both: the frozen pass has the same loss and hook gradients bit
// for bit, no weight-gradient product and `input_gemms` base input-gradient products, and every
// adapted factor has a gradient (layer 0's depend on input gradients through every layer above).
void check_frozen_matches_trained(const pg::ModelConfig& cfg, const std::vector<float>& params, const Batch& batch,
                                  const pg::Dropout& dropout, const std::function<bool(int, pg::LinearKind)>& only,
                                  bool recompute, int threads, int64_t input_gemms) {
    const pg::ParamLayout layout(cfg);
    pg::ThreadPool pool(threads);
    pg::EngineOptions options;
    options.recompute = recompute;
    LowRankHook with_base(cfg, 2, 8), frozen(cfg, 2, 8);
    with_base.only = frozen.only = only;
    pg::Engine a(cfg, kB, kT, options), b(cfg, kB, kT, options);
    a.set_linear_hook(&with_base);
    b.set_linear_hook(&frozen);
    std::vector<float> grads(size_t(layout.total), 0.0f);
    const pg::LossSum la = a.forward_backward(params.data(), grads.data(), batch.inputs.data(), batch.targets.data(),
                                              kB, kT, 0.1f, dropout, pool);
    CHECK(a.weight_gradient_gemms() == 4 * cfg.n_layer + 1);
    CHECK(a.input_gradient_gemms() == 4 * cfg.n_layer);
    const pg::LossSum lb = b.forward_backward(params.data(), nullptr, batch.inputs.data(), batch.targets.data(), kB,
                                              kT, 0.1f, dropout, pool);
    CHECK(b.weight_gradient_gemms() == 0);
    CHECK(b.input_gradient_gemms() == input_gemms);
    CHECK(la.sum == lb.sum);
    for (int l = 0; l < cfg.n_layer; ++l)
        for (int k = 0; k < pg::kNumLinearKinds; ++k) {
            const pg::LinearKind kind = pg::LinearKind(k);
            INFO("layer " << l << " " << pg::linear_kind_name(kind));
            const LowRankHook::Pair& p = with_base.pair(l, kind);
            const LowRankHook::Pair& q = frozen.pair(l, kind);
            CHECK(std::memcmp(p.dA.data(), q.dA.data(), p.dA.size() * sizeof(float)) == 0);
            CHECK(std::memcmp(p.dB.data(), q.dB.data(), p.dB.size() * sizeof(float)) == 0);
            double magnitude_a = 0.0, magnitude_b = 0.0;
            for (float x : q.dA) magnitude_a += std::fabs(x);
            for (float x : q.dB) magnitude_b += std::fabs(x);
            const bool adapted = !only || only(l, kind);
            CHECK((magnitude_a > 0.0) == adapted);
            CHECK((magnitude_b > 0.0) == adapted);
        }
}

TEST_CASE("frozen base: no weight-gradient product, the same hook gradients bit for bit", "[model][hook]") {
    const pg::ModelConfig cfg = hook_config();
    const std::vector<float> params = pg_test::random_model_params<float>(cfg, 6, 0.3);
    const Batch batch = random_batch(cfg, 23);
    pg::Dropout dropout;
    dropout.p = 0.2f;
    dropout.seed = 99;
    dropout.stream = 4;
    for (const bool recompute : {false, true})
        for (const int threads : {1, 2}) {
            INFO("recompute " << recompute << ", threads " << threads);
            // every linear adapted: all but layer 0's c_attn input gradient (nothing reads it)
            check_frozen_matches_trained(cfg, params, batch, dropout, nullptr, recompute, threads,
                                         4 * cfg.n_layer - 1);
        }
    // Without a hook a frozen base has nothing to train.
    pg::ThreadPool pool(1);
    pg::Engine plain(cfg, kB, kT);
    CHECK_THROWS_AS(plain.forward_backward(params.data(), nullptr, batch.inputs.data(), batch.targets.data(), kB, kT,
                                           0.1f, pg::Dropout{}, pool),
                    pg::Error);
}

TEST_CASE("frozen base: the backward reaches only what an adapted linear reads, with the same gradients",
          "[model][hook]") {
    const pg::ModelConfig cfg = hook_config();  // 2 layers
    const std::vector<float> params = pg_test::random_model_params<float>(cfg, 7, 0.3);
    const Batch batch = random_batch(cfg, 24);
    pg::Dropout dropout;
    dropout.p = 0.2f;
    dropout.seed = 5;
    using K = pg::LinearKind;
    struct Case {
        const char* name;
        std::function<bool(int, K)> only;
        int64_t input_gradient_gemms;  // of the frozen base's pass; a trained base has 4 per layer
    };
    const std::vector<Case> cases = {
        // layer 0 needs no gradient below its c_attn: 4 + 3
        {"attn.c_attn of every layer", [](int, K k) { return k == K::attn_qkv; }, 7},
        // layer 0 is never reached; layer 1 stops at its c_attn
        {"every linear of the top layer", [](int l, K) { return l == 1; }, 3},
        // the gradient stops at the top layer's mlp.c_proj: no base product at all
        {"the top layer's mlp.c_proj", [](int l, K k) { return l == 1 && k == K::mlp_proj; }, 0},
        // layer 1 whole, then layer 0's mlp.c_proj product (for c_fc's output gradient)
        {"layer 0's mlp.c_fc", [](int l, K k) { return l == 0 && k == K::mlp_fc; }, 5},
        {"nothing", [](int, K) { return false; }, 0},
    };
    for (const Case& c : cases)
        for (const bool recompute : {false, true})
            for (const int threads : {1, 2}) {
                INFO(c.name << ", recompute " << recompute << ", threads " << threads);
                check_frozen_matches_trained(cfg, params, batch, dropout, c.only, recompute, threads,
                                             c.input_gradient_gemms);
            }
}
