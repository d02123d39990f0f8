// The LoRA term in the engine's linear path and merging it into the weights: a fresh adapter
// gives the base's logits exactly; applied and merged logits agree within a stated fp32 bound;
// unmerge restores the weights within rounding; adapter gradients equal the chain rule through
// the merged weights' gradient; the causal mask holds with an adapter attached.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "io/checkpoint.hpp"
#include "lora_test_support.hpp"
#include "lora/adapter.hpp"
#include "lora/lora_hook.hpp"
#include "lora/merge.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"
#include "test_support.hpp"

namespace {

using lora_test::randomise_b;
using lora_test::tokens;
using lora_test::check_finite_differences;
using lora_test::logits_of;
using lora_test::max_abs;
using lora_test::max_diff;


pg::ModelConfig small_config() {
    pg::ModelConfig c;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 16;
    c.vocab_size = 11;
    c.padded_vocab_size = 12;
    return c;
}

pg::Model base_model(uint64_t seed) {
    pg::Model m(small_config());
    pg::init_gpt2_params(m.config(), m.params(), seed);
    return m;
}

pg::lora::LoraConfig all_linears(int rank) {
    pg::lora::LoraConfig c;
    c.rank = rank;
    c.alpha = 2.0f * rank;
    c.target_modules = PG_LORA_ALL_LINEARS;
    return c;
}

}  // namespace

TEST_CASE("lora hook: a fresh adapter gives the base's logits exactly", "[lora]") {
    const pg::Model base = base_model(5);
    const pg::lora::Adapter fresh = pg::lora::Adapter::create(base, all_linears(4));
    pg::lora::LoraHook hook(fresh, nullptr);
    const int B = 2, T = 16;
    const auto in = tokens(B * T, 1, 11);
    const auto plain = logits_of(base, base.params(), nullptr, in, B, T);
    const auto adapted = logits_of(base, base.params(), &hook, in, B, T);
    CHECK(std::memcmp(plain.data(), adapted.data(), plain.size() * sizeof(float)) == 0);
}

TEST_CASE("lora merge: applied and merged logits agree within the fp32 bound", "[lora]") {
    const pg::Model base = base_model(5);
    pg::lora::LoraConfig cfg = all_linears(4);
    for (bool rslora : {false, true}) {
        cfg.use_rslora = rslora;
        pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
        randomise_b(a, 9, 0.05);
        pg::lora::LoraHook hook(a, nullptr);
        const int B = 2, T = 16;
        const auto in = tokens(B * T, 2, 11);
        const auto plain = logits_of(base, base.params(), nullptr, in, B, T);
        const auto applied = logits_of(base, base.params(), &hook, in, B, T);
        pg::Model merged_model(base.config());
        pg::lora::merge_into_copy(base, a, merged_model, 2);
        const auto merged = logits_of(merged_model, merged_model.params(), nullptr, in, B, T);
        // The adapter matters (far above the bound below) ...
        CHECK(max_diff(plain, applied) > 1e-2);
        // ... and merging it changes only rounding: the bound is 1e-5 of the largest logit
        // (fp32 epsilon is 1.2e-7; two orders of magnitude for the reordered sums).
        const double bound = 1e-5 * std::max(1.0, max_abs(applied));
        INFO("rslora " << rslora << ": max |applied - merged| = " << max_diff(applied, merged));
        CHECK(max_diff(applied, merged) <= bound);
    }
}

TEST_CASE("lora merge: unmerge restores the weights within rounding; wrong bases are refused", "[lora]") {
    pg::Model model = base_model(5);
    const std::vector<float> original(model.params(), model.params() + model.num_params());
    pg::lora::Adapter a = pg::lora::Adapter::create(model, all_linears(4));
    randomise_b(a, 9, 0.05);
    pg::lora::merge_in_place(model, a, 2);
    CHECK(std::memcmp(original.data(), model.params(), original.size() * 4) != 0);
    // Merging twice is refused: the model is no longer the adapter's base.
    CHECK_THROWS_AS(pg::lora::merge_in_place(model, a, 2), pg::Error);
    pg::lora::unmerge_in_place(model, a, 2);
    double worst = 0;
    for (size_t i = 0; i < original.size(); ++i)
        worst = std::max(worst, double(std::fabs(original[i] - model.params()[i])));
    // |W| and |scale B A| are below 1 here: a few fp32 ulps of 1.
    CHECK(worst <= 4e-7);

    pg::Model other = base_model(6);
    try {
        pg::Model out(other.config());
        pg::lora::merge_into_copy(other, a, out, 1);
        FAIL("merged into a base of other weights");
    } catch (const pg::Error& e) {
        CHECK(e.status() == PG_ERR_GEOMETRY);
    }
}

TEST_CASE("lora merge: a merged model saves, loads and evaluates like any model", "[lora]") {
    const pg::Model base = base_model(5);
    pg::lora::Adapter a = pg::lora::Adapter::create(base, all_linears(2));
    randomise_b(a, 3, 0.05);
    auto merged = std::make_unique<pg::Model>(base.config());
    pg::lora::merge_into_copy(base, a, *merged, 1);
    pg::io::VectorSink sink;
    pg::io::write_checkpoint(*merged, nullptr, 0, sink);
    pg::io::MemorySource src(sink.bytes.data(), sink.bytes.size());
    const pg::io::CheckpointHeader h = pg::io::read_checkpoint_header(src);
    pg::Model loaded(h.config);
    pg::io::read_checkpoint_data(src, h, loaded, nullptr);
    CHECK(std::memcmp(loaded.params(), merged->params(), sizeof(float) * size_t(merged->num_params())) == 0);
    const int B = 1, T = 16;
    const auto in = tokens(B * T, 4, 11);
    const auto x = logits_of(*merged, merged->params(), nullptr, in, B, T, 1);
    const auto y = logits_of(loaded, loaded.params(), nullptr, in, B, T, 1);
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

TEST_CASE("lora hook: gradients are the chain rule through the merged weights' gradient", "[lora]") {
    // With W' = W + s B A and G = dL/dW' (the full model's weight gradient at the merged
    // weights): dL/dB = s G A^T and dL/dA = s B^T G. The frozen-base backward with the hook
    // must give exactly these (within fp32 rounding), for each of the four kinds.
    const pg::Model base = base_model(5);
    pg::lora::Adapter a = pg::lora::Adapter::create(base, all_linears(3));
    randomise_b(a, 11, 0.05);
    const int B = 2, T = 12;
    const auto seq = tokens(B * (T + 1), 6, 11);
    std::vector<int32_t> in, tg;
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            in.push_back(seq[size_t(b * (T + 1) + t)]);
            tg.push_back(seq[size_t(b * (T + 1) + t + 1)]);
        }
    pg::ThreadPool pool(2);
    const float grad_scale = 1.0f / float(B * T);

    std::vector<float> ga(size_t(a.num_params()), 0.0f);
    pg::lora::LoraHook hook(a, ga.data());
    pg::Engine frozen(base.config(), B, T);
    frozen.set_linear_hook(&hook);
    const pg::LossSum lh = frozen.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T,
                                                   grad_scale, pg::Dropout{}, pool);
    CHECK(frozen.weight_gradient_gemms() == 0);

    auto merged = std::make_unique<pg::Model>(base.config());
    pg::lora::merge_into_copy(base, a, *merged, 2);
    std::vector<float> gm(size_t(merged->num_params()), 0.0f);
    pg::Engine full(base.config(), B, T);
    const pg::LossSum lm = full.forward_backward(merged->params(), gm.data(), in.data(), tg.data(), B, T,
                                                 grad_scale, pg::Dropout{}, pool);
    CHECK(lh.mean() == Approx(lm.mean()).epsilon(1e-5));

    const pg::ParamKind weight_of[] = {pg::kQkvw, pg::kAttprojw, pg::kFcw, pg::kFcprojw};
    const double s = a.scale();
    const int r = a.config().rank;
    for (const auto& m : a.linears()) {
        const float* G = gm.data() + merged->layout().offset[weight_of[int(m.kind)]] + m.layer * m.out * m.in;
        const float* A = a.a(m);
        const float* Bm = a.b(m);
        double worst = 0, scale_of = 0;
        for (int64_t o = 0; o < m.out; ++o)
            for (int k = 0; k < r; ++k) {
                double want = 0;
                for (int64_t i = 0; i < m.in; ++i) want += s * G[o * m.in + i] * A[k * m.in + i];
                worst = std::max(worst, std::fabs(want - ga[size_t(m.b_offset + o * r + k)]));
                scale_of = std::max(scale_of, std::fabs(want));
            }
        for (int k = 0; k < r; ++k)
            for (int64_t i = 0; i < m.in; ++i) {
                double want = 0;
                for (int64_t o = 0; o < m.out; ++o) want += s * Bm[o * r + k] * G[o * m.in + i];
                worst = std::max(worst, std::fabs(want - ga[size_t(m.a_offset + k * m.in + i)]));
                scale_of = std::max(scale_of, std::fabs(want));
            }
        INFO("layer " << m.layer << " " << pg::lora::target_name(m.target) << ": worst " << worst << " of "
                      << scale_of);
        CHECK(scale_of > 0);
        CHECK(worst <= 1e-4 * scale_of);
    }
}

TEST_CASE("lora hook: gradients match central finite differences", "[lora]") {
    const pg::Model base = base_model(5);
    pg::lora::LoraConfig cfg = all_linears(2);
    pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    randomise_b(a, 13, 0.1);
    const int B = 1, T = 8;
    const auto seq = tokens(T + 1, 7, 11);
    const std::vector<int32_t> in(seq.begin(), seq.end() - 1), tg(seq.begin() + 1, seq.end());
    pg::ThreadPool pool(1);
    pg::Engine engine(base.config(), B, T);
    std::vector<float> g(size_t(a.num_params()), 0.0f);
    pg::lora::LoraHook hook(a, g.data());
    engine.set_linear_hook(&hook);
    engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, pg::Dropout{}, pool);
    auto loss = [&] { return engine.forward(base.params(), in.data(), tg.data(), B, T, nullptr, nullptr, pool).sum; };
    // A handful of elements of every tensor.
    check_finite_differences(a, g, loss, 3, [](const pg::lora::AdapterTensor&) { return true; });
}

TEST_CASE("lora hook: dropout on the branch only, same masks in forward and backward", "[lora]") {
    const pg::Model base = base_model(5);
    pg::lora::LoraConfig cfg = all_linears(2);
    cfg.dropout = 0.5f;
    pg::lora::Adapter a = pg::lora::Adapter::create(base, cfg);
    // B = 0: whatever dropout does to the branch, the loss is the base's.
    const int B = 1, T = 8;
    const auto seq = tokens(T + 1, 7, 11);
    const std::vector<int32_t> in(seq.begin(), seq.end() - 1), tg(seq.begin() + 1, seq.end());
    pg::ThreadPool pool(2);
    pg::Engine engine(base.config(), B, T);
    std::vector<float> g(size_t(a.num_params()), 0.0f);
    pg::lora::LoraHook hook(a, g.data());
    engine.set_linear_hook(&hook);
    const pg::Dropout none{0.0f, 77, 3};
    const double plain = engine.forward(base.params(), in.data(), tg.data(), B, T, nullptr, nullptr, pool).sum;
    const double trained = engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f,
                                                   none, pool).sum;
    CHECK(trained == plain);
    // With B = 0, dA = 0 and dB is the gradient through the dropped input: compare with the
    // same step at dropout 0 (dB must differ: the branch's input was dropped and rescaled).
    std::vector<float> dropped = g;
    cfg.dropout = 0.0f;
    pg::lora::Adapter b = pg::lora::Adapter::create(base, cfg);
    std::vector<float> g0(size_t(b.num_params()), 0.0f);
    pg::lora::LoraHook hook0(b, g0.data());
    engine.set_linear_hook(&hook0);
    engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, none, pool);
    for (const auto& m : a.linears())
        for (int64_t i = 0; i < a.config().rank * m.in; ++i) REQUIRE(dropped[size_t(m.a_offset + i)] == 0.0f);
    CHECK(std::memcmp(dropped.data(), g0.data(), g0.size() * 4) != 0);
    // And the same stream gives the same masks: a second pass gives the same gradients.
    std::vector<float> again(size_t(a.num_params()), 0.0f);
    pg::lora::LoraHook hook2(a, again.data());
    engine.set_linear_hook(&hook2);
    engine.forward_backward(base.params(), nullptr, in.data(), tg.data(), B, T, 1.0f, none, pool);
    CHECK(std::memcmp(dropped.data(), again.data(), again.size() * 4) == 0);
}

TEST_CASE("lora hook: the causal mask holds with an adapter attached", "[lora]") {
    const pg::Model base = base_model(5);
    pg::lora::Adapter a = pg::lora::Adapter::create(base, all_linears(4));
    randomise_b(a, 21, 0.1);
    pg::lora::LoraHook hook(a, nullptr);
    const int T = 16, V = 11;
    auto in = tokens(T, 8, V);
    const auto before = logits_of(base, base.params(), &hook, in, 1, T);
    for (int t = 0; t < T - 1; ++t) {
        auto changed = in;
        for (int u = t + 1; u < T; ++u) changed[size_t(u)] = (changed[size_t(u)] + 1 + u) % V;
        const auto after = logits_of(base, base.params(), &hook, changed, 1, T);
        INFO("tokens after position " << t << " changed");
        CHECK(std::memcmp(before.data(), after.data(), sizeof(float) * size_t((t + 1) * V)) == 0);
    }
}

TEST_CASE("lora merge: the C API", "[lora]") {
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 3, &base) == PG_OK);
    pg_lora_config c;
    pg_lora_config_default(&c);
    c.rank = 2;
    c.target_modules = PG_LORA_ALL_LINEARS;
    pg_lora_adapter* a = nullptr;
    REQUIRE(pg_lora_adapter_create(base, &c, &a) == PG_OK);
    int32_t idx = 0;
    float* data = nullptr;
    REQUIRE(pg_lora_adapter_find_tensor(a, "h.1.mlp.c_proj.lora_B.weight", &idx) == PG_OK);
    REQUIRE(pg_lora_adapter_tensor_data_mutable(a, idx, &data) == PG_OK);
    data[0] = 0.5f;

    pg_model* merged = nullptr;
    REQUIRE(pg_lora_merge(base, a, 1, &merged) == PG_OK);
    const float *pb = nullptr, *pm = nullptr;
    int64_t n = 0;
    REQUIRE(pg_model_params(base, &pb, &n) == PG_OK);
    REQUIRE(pg_model_params(merged, &pm, &n) == PG_OK);
    CHECK(std::memcmp(pb, pm, size_t(n) * 4) != 0);
    // The merged model is not the adapter's base: merging into it is refused, naming weights.
    CHECK(pg_lora_merge_in_place(merged, a, 1) == PG_ERR_GEOMETRY);
    CHECK(std::string(pg_last_error()).find("pg_lora_merge_in_place") != std::string::npos);
    CHECK(std::string(pg_last_error()).find("weights") != std::string::npos);
    REQUIRE(pg_lora_unmerge_in_place(merged, a, 1) == PG_OK);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(pb[i] - pm[i])));
    CHECK(worst <= 1e-6);
    REQUIRE(pg_lora_merge_in_place(base, a, 1) == PG_OK);

    pg_model* out = base;
    CHECK(pg_lora_merge(nullptr, a, 1, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK(pg_lora_merge(base, nullptr, 1, &out) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_merge_in_place(nullptr, a, 1) == PG_ERR_INVALID_ARGUMENT);
    CHECK(pg_lora_unmerge_in_place(base, nullptr, 1) == PG_ERR_INVALID_ARGUMENT);
    pg_model_free(merged);
    pg_lora_adapter_free(a);
    pg_model_free(base);
}
